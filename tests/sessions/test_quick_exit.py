"""A pytest process with the harness's plugins freezes its heap at its exit and not before
(fixtures/quick_exit.py): the interpreter's last garbage collections skip what goes away with the
process, while a session run in-process leaves its garbage to the collector."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

# The probe's exit handler is registered before the session's, so it runs after it (last in, first out).
PROBE = """
import atexit, gc, sys
import pytest
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, flush=True))
pytest.main(["-q", "-p", "no:cacheprovider", "-p", "fixtures.quick_exit", sys.argv[1]])
print("frozen after the session:", gc.get_freeze_count() > 0, flush=True)
"""


def test_the_heap_is_frozen_at_exit_and_not_before(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    # A fresh interpreter: one forked from the self-tests' warm Python starts with a frozen heap.
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "test_one.py")], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.splitlines()[-2:] == ["frozen after the session: False", "frozen at exit: True"], done.stdout + done.stderr
