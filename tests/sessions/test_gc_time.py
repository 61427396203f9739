"""bench/gc_time.py, the command that times the garbage collector in a pytest run: its table has a
row per phase, and a collection a test makes is counted in the tests' row."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import REPO

HEADING = "the garbage collector's time, by phase (collections, seconds):"


def test_a_collection_in_a_test_is_counted_in_the_tests_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "test_one.py").write_text("import gc\n\ndef test_one():\n    gc.collect(1)\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location("gc_time", REPO / "bench" / "gc_time.py")
    gc_time = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gc_time)
    assert gc_time.main(["-q", "-p", "no:cacheprovider", str(tmp_path / "test_one.py")]) == 0
    printed = capsys.readouterr().out.splitlines()
    # Each row: its phase, then per generation its collections and seconds, then the phase's seconds.
    rows = {line.split()[0]: [cell for cell in line.split()[1:] if cell != "s"] for line in printed[printed.index(HEADING) + 1 :]}
    assert list(rows) == ["phase", "start-up", "collection", "tests", "end", "total"]
    assert int(rows["tests"][2]) >= 1, rows["tests"]  # generation 1's collections: the test's gc.collect(1)
