"""Run the CPU suites repeatedly with fresh Hypothesis seeds and check the verdicts never change.

    python bench/verdict_stability.py [--runs 10] [-- extra pytest args, e.g. -n 2]

Prints each run's verdicts and wall time; exits 1 when any run's verdicts differ from the first.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class NoVerdicts(Exception):
    """A run that wrote no results.json (bad pytest arguments, say): its output's last lines."""


def one_run(extra: list[str]) -> tuple[dict[str, str], int, float]:
    """(bug id -> "verdict/evidence", exit status, wall seconds) of one pytest run."""
    with tempfile.TemporaryDirectory() as report_dir:
        start = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--report-dir={report_dir}", *extra],
            cwd=REPO, capture_output=True, text=True,
        )
        seconds = time.perf_counter() - start
        results = Path(report_dir, "results.json")
        if not results.is_file():
            raise NoVerdicts("\n".join((completed.stdout + completed.stderr).strip().splitlines()[-3:]))
        verdicts = json.loads(results.read_text())["verdicts"]
    return {v["bug_id"]: f"{v['verdict']}/{v['evidence'] or '-'}" for v in verdicts}, completed.returncode, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    options = parser.parse_args()
    if options.runs < 2:  # one run (or none) compares nothing: "identical in every run" would be empty
        parser.error(f"--runs {options.runs}: compare at least 2 runs")
    first: dict[str, str] | None = None
    stable = True
    for run in range(1, options.runs + 1):
        # Hypothesis draws fresh examples every run: the dev/ci profiles are not derandomized.
        try:
            verdicts, status, seconds = one_run(options.pytest_args)
        except NoVerdicts as error:
            print(f"run {run}: pytest wrote no results.json; its last lines:\n{error}", file=sys.stderr)
            return 2
        first = first or verdicts
        same = verdicts == first and status == 0
        stable &= same
        print(f"run {run:2d}: exit {status}  {seconds:5.1f} s  {'same' if same else 'DIFFERENT'}  "
              + "  ".join(f"{bug}={verdict}" for bug, verdict in verdicts.items()), flush=True)
    print("verdicts identical in every run" if stable else "VERDICTS CHANGED between runs")
    return 0 if stable else 1


if __name__ == "__main__":
    sys.exit(main())
