"""A pytest process with the harness's plugins (fixtures/frozen_heap.py) freezes the heap built before
collection and before the tests, collects the tests' own objects less often, and puts both back
before pytest's closing collections, an in-process session inside it leaving them to the outer one; it freezes the heap again at its exit
(the interpreter's last garbage collections skip what goes away with the process), but not where
a nanobind extension would report the frozen objects as leaks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fixtures.frozen_heap import TESTS_THRESHOLD, nanobind_loaded
from tests.conftest import REPO

# The probe's exit handler is registered before the session's, so it runs after it (last in, first out).
PROBE = """
import atexit, gc, sys, types
import pytest
threshold = gc.get_threshold()
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, flush=True))
if sys.argv[2] == "nanobind":  # a module holding a class of nanobind's, as triton's libtriton from 3.9
    meta = type("nb_meta", (type,), {"__module__": "nanobind"})
    sys.modules["bound"] = types.ModuleType("bound")
    sys.modules["bound"].Builder = meta("Builder", (), {})
if sys.argv[2] == "frozen before":  # as in a process forked from a warm one
    gc.freeze()
class Probe:  # what collection and pytest's closing hooks (after the plugin's) find
    def pytest_collection_modifyitems(self):
        print("during collection:", gc.get_freeze_count() > 0, flush=True)
    def pytest_unconfigure(self):
        print("as pytest closes:", gc.get_freeze_count() > 0, gc.get_threshold() == threshold, flush=True)
try:
    pytest.main(["-q", "-s", "-p", "no:cacheprovider", "-p", "fixtures.frozen_heap", sys.argv[1]], plugins=[Probe()])
except RuntimeError as error:  # the conftest's, from its unconfigure
    print("raised:", error, flush=True)
print("after the session:", gc.get_freeze_count() > 0, gc.get_threshold() == threshold, flush=True)
"""
# The test the probe's session runs: what it sees, then the same after a session of its own in its
# process (as pytester's in-process sessions are).
TEST = """
import gc, pytest
def test_one(tmp_path):
    print("during the tests:", gc.get_freeze_count() > 0, gc.get_threshold()[0], flush=True)
    (tmp_path / "test_inner.py").write_text("def test_inner():\\n    pass\\n")
    pytest.main(["-q", "-p", "no:cacheprovider", "-p", "fixtures.frozen_heap", str(tmp_path / "test_inner.py")])
    print("after an inner session:", gc.get_freeze_count() > 0, gc.get_threshold()[0], flush=True)
"""


# A conftest whose own unconfigure, called before the plugin's, raises: pluggy calls no other.
RAISING_CONFTEST = """
import pytest
@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    raise RuntimeError("an unconfigure that raised")
"""


@pytest.mark.parametrize(("loaded", "thawed", "frozen"), [("", True, True), ("nanobind", True, False), ("frozen before", False, True)])
def test_the_heap_is_frozen_for_the_tests_and_at_exit(tmp_path: Path, loaded: str, thawed: bool, frozen: bool) -> None:
    """Thawed as pytest closes, unless it was frozen before the session (the thaw is all or nothing)."""
    (tmp_path / "test_one.py").write_text(TEST, encoding="utf-8")
    # A fresh interpreter: one forked from the self-tests' warm Python starts with a frozen heap.
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "test_one.py"), loaded], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    seen = [line.strip(".") for line in done.stdout.splitlines() if line.strip(".").startswith(("during", "after", "as pytest", "frozen"))]
    assert seen == [
        "during collection: True",
        f"during the tests: True {TESTS_THRESHOLD}",
        f"after an inner session: True {TESTS_THRESHOLD}",
        f"as pytest closes: {not thawed} True",
        f"after the session: {not thawed} True",
        f"frozen at exit: {frozen}",
    ], done.stdout + done.stderr


def test_a_nanobind_class_is_told_from_pybind11s_and_plain_ones() -> None:
    plain = ModuleType("plain")
    plain.Point, plain.number = type("Point", (), {}), 3
    pybind = ModuleType("pybind")
    pybind.Builder = type("pybind11_type", (type,), {"__module__": "pybind11_builtins"})("Builder", (), {})
    bound = ModuleType("bound")
    bound.Builder = type("nb_meta", (type,), {"__module__": "nanobind"})("Builder", (), {})
    assert not nanobind_loaded([plain, pybind]) and nanobind_loaded([plain, bound])


def test_the_heap_is_thawed_when_another_unconfigure_raises(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text(TEST, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(RAISING_CONFTEST, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "test_one.py"), ""], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.splitlines()[-3:] == ["raised: an unconfigure that raised", "after the session: False True", "frozen at exit: True"], (
        done.stdout + done.stderr
    )
