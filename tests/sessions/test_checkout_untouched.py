"""`pytest tests` leaves the checkout as it found it: the suites' reports of the last `pytest`
(reports/out/results.json, report.html, junit.xml) stay, and nothing new lands in the tree.

By design: a session fixture of tests/conftest.py sets $HARNESS_SELF_TEST, which every session a self-test starts
inherits, and with it a run of suites/ writes reports only where --report-dir says."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reports.run.plugin_results import SELF_TEST_ENV
from tests.conftest import REPO
from tests.helpers import warm_python

REPORTS = REPO / "reports" / "out"


def test_the_self_tests_run_with_default_reports_off() -> None:
    assert os.environ.get(SELF_TEST_ENV)


@pytest.fixture
def checkout_like(harness: pytest.Pytester) -> pytest.Pytester:
    """A pytester directory shaped like the repository: an ini at its root, suites/ and tests/."""
    harness.makeini("[pytest]\n")
    for folder in ("suites", "tests"):
        (harness.path / folder).mkdir()
        (harness.path / folder / f"test_in_{folder}.py").write_text("def test_ok():\n    pass\n")
    return harness


def test_a_run_of_the_suites_writes_reports_out_by_default(checkout_like, monkeypatch) -> None:
    monkeypatch.delenv(SELF_TEST_ENV)
    checkout_like.runpytest("tests").assert_outcomes(passed=1)
    assert not (checkout_like.path / "reports").exists()
    checkout_like.runpytest("suites").assert_outcomes(passed=1)
    assert {p.name for p in (checkout_like.path / "reports" / "out").iterdir()} == {"report.html", "results.json", "junit.xml"}


def test_a_session_started_by_the_self_tests_writes_only_where_asked(checkout_like, tmp_path: Path) -> None:
    checkout_like.runpytest("suites").assert_outcomes(passed=1)
    assert not (checkout_like.path / "reports").exists()
    checkout_like.runpytest("suites", f"--report-dir={tmp_path / 'asked'}").assert_outcomes(passed=1)
    assert (tmp_path / "asked" / "results.json").is_file()


def checkout_state() -> tuple[str, dict[str, int]]:
    """`git status --porcelain` (untracked files listed one by one) and every file under
    reports/out with its modification time."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    reports = {str(p.relative_to(REPORTS)): p.stat().st_mtime_ns for p in REPORTS.rglob("*") if p.is_file()} if REPORTS.exists() else {}
    return status, reports


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout (or git missing)")
def test_a_suites_session_from_the_checkout_leaves_it_as_found() -> None:
    """What `pytest tests` did wrong before: a session of suites/ started from the checkout (the
    CUDA tripwire's collection, say) replaced the suites' reports with its own."""
    before = checkout_state()
    run = warm_python.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--device", "cpu",
         "suites/kornia_2791_planckian_jitter/test_planckian_jitter_state.py"],
        cwd=REPO, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "kornia-2791" in run.stdout  # the session drew its verdicts: it ran, it only wrote nothing
    assert checkout_state() == before
