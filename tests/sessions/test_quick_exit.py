"""A pytest process with the harness's plugins freezes its heap at its exit and not before
(fixtures/quick_exit.py): the interpreter's last garbage collections skip what goes away with the
process, while a session run in-process leaves its garbage to the collector; and not where a
nanobind extension would report the frozen objects as leaks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fixtures.quick_exit import nanobind_loaded
from tests.conftest import REPO

# The probe's exit handler is registered before the session's, so it runs after it (last in, first out).
PROBE = """
import atexit, gc, sys, types
import pytest
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, flush=True))
if sys.argv[2] == "nanobind":  # a module holding a class of nanobind's, as triton's libtriton from 3.9
    meta = type("nb_meta", (type,), {"__module__": "nanobind"})
    sys.modules["bound"] = types.ModuleType("bound")
    sys.modules["bound"].Builder = meta("Builder", (), {})
pytest.main(["-q", "-p", "no:cacheprovider", "-p", "fixtures.quick_exit", sys.argv[1]])
print("frozen after the session:", gc.get_freeze_count() > 0, flush=True)
"""


@pytest.mark.parametrize(("loaded", "frozen"), [("", True), ("nanobind", False)])
def test_the_heap_is_frozen_at_exit_and_not_before(tmp_path: Path, loaded: str, frozen: bool) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    # A fresh interpreter: one forked from the self-tests' warm Python starts with a frozen heap.
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "test_one.py"), loaded], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.splitlines()[-2:] == ["frozen after the session: False", f"frozen at exit: {frozen}"], done.stdout + done.stderr


def test_a_nanobind_class_is_told_from_pybind11s_and_plain_ones() -> None:
    plain = ModuleType("plain")
    plain.Point, plain.number = type("Point", (), {}), 3
    pybind = ModuleType("pybind")
    pybind.Builder = type("pybind11_type", (type,), {"__module__": "pybind11_builtins"})("Builder", (), {})
    bound = ModuleType("bound")
    bound.Builder = type("nb_meta", (type,), {"__module__": "nanobind"})("Builder", (), {})
    assert not nanobind_loaded([plain, pybind]) and nanobind_loaded([plain, bound])
