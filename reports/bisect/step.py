"""One bisect step: install the checked-out commit of the package (cached per commit hash), run
the bug's suites in a fresh pytest, and say what git should make of it.

`git bisect run` executes `python -m reports.bisect.step PLAN.json` in the temporary clone; the
bisect command calls `test_commit` itself for the two ends. Each step appends its record to
steps.jsonl under --out and prints one progress line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.versions import installed_version
from reports.bisect.answers import ABORT, SKIP, StepAnswer, step_answer, terms
from reports.run.loading import ResultsError, load_results
from reports.scan.run import ScanError, install_into, last_line, pytest_command, release_folder, run_suites


@dataclass(frozen=True)
class Plan:
    """What every step needs, written once by the bisect command (PLAN.json)."""

    package: str
    bug_id: str
    registry: str
    fixed: bool
    out: str
    cache: str
    pytest_args: list[str]
    install_env: dict[str, str]
    clone: str  # the bisect's own scratch clone, which each step cleans: never the user's repository

    @staticmethod
    def read(path: Path) -> Plan:
        return Plan(**json.loads(path.read_text(encoding="utf-8")))


class WrongBuild(RuntimeError):
    """The run saw another build of the package than the commit's: no step can be trusted."""


def commit_facts(clone: Path, commit: str = "HEAD") -> tuple[str, str, str]:
    """(full hash, subject, committer date ISO 8601) of a commit (default: what is checked out)."""
    shown = subprocess.run(["git", "log", "-1", "--format=%H%x00%s%x00%cI", commit], cwd=clone, capture_output=True, text=True, check=True)
    commit, subject, date = shown.stdout.rstrip("\n").split("\x00")
    return commit, subject, date


def bug_record(report_dir: Path, bug_id: str, package: str, version: str | None) -> dict | None:
    """The bug's verdict record, after checking the run saw the commit's build (a package
    shadowing the folder would make every step about the environment's release)."""
    try:
        document = load_results(report_dir / "results.json")
    except ResultsError:
        return None
    record = next((entry for entry in document["verdicts"] if entry["bug_id"] == bug_id), None)
    if record is not None and record["installed"] != version:
        raise WrongBuild(
            f"the run saw {package} {record['installed'] or '(not installed)'}, the commit builds {version}: is it shadowed on sys.path?"
        )
    return record


@dataclass(frozen=True)
class Step:
    commit: str
    subject: str
    date: str
    version: str | None
    bug_present: bool | None
    verdict: str | None
    evidence: str | None
    term: str  # old term, new term, or "skip"
    exit_status: int
    reason: str
    cached: bool
    install_s: float
    pytest_s: float
    report: str | None


def clean_tree(worktree: Path) -> str:
    """Leave the clone holding only the commit's files: a build leaves build/ and *.egg-info behind,
    which the next commit's wheel takes in (a module that became a package again was built as both,
    and the stale package won the import) and which can block git's next checkout. Why it could
    not, or ""."""
    done = subprocess.run(["git", "clean", "-xdfq"], cwd=worktree, capture_output=True, text=True, check=False)
    return f"cannot clean the clone before building: {last_line(done.stderr)}" if done.returncode else ""


def test_commit(worktree: Path, plan: Plan) -> Step:
    commit, subject, date = commit_facts(worktree)
    registry = load_registry(Path(plan.registry))
    bug = registry[plan.bug_id]
    folder = release_folder(Path(plan.cache), plan.package, f"git-{commit}")
    started = time.perf_counter()
    try:
        if unclean := clean_tree(worktree):
            raise ScanError(f"{plan.package} {commit[:10]}: {unclean}")
        # --no-cache: uv would reuse a wheel built from the same path at another commit.
        cached = not install_into(folder, str(worktree), f"{plan.package} {commit[:10]}", plan.install_env, ("--no-cache",))
    except ScanError as error:
        answer = StepAnswer(None, SKIP, str(error).split(": ", 1)[1])
        return _step(
            commit, subject, date, None, None, answer, plan, cached=False, install_s=time.perf_counter() - started, pytest_s=0.0, report=None,
        )
    finally:
        clean_tree(worktree)
    installed = time.perf_counter()
    if not any((folder / name).exists() for name in (plan.package, f"{plan.package}.py")):
        answer = StepAnswer(None, SKIP, f"the build holds no {plan.package} to import: its run would test another copy")
        return _step(commit, subject, date, None, None, answer, plan, cached, installed - started, pytest_s=0.0, report=None)
    version = installed_version(plan.package, [str(folder)])
    report_dir = Path(plan.out) / "steps" / commit[:12]
    shutil.rmtree(report_dir, ignore_errors=True)  # a run that writes no results.json must not read a kept one
    status = run_suites(folder, pytest_command([bug], Path(plan.registry), report_dir, plan.pytest_args), report_dir)
    finished = time.perf_counter()
    record = bug_record(report_dir, bug.id, plan.package, version) if status in (0, 1) else None
    answer = step_answer(record, bug.kind, plan.fixed)
    if record is None:
        answer = StepAnswer(None, SKIP, f"pytest exit status {status}: {last_line((report_dir / 'pytest.log').read_text(encoding='utf-8'))}")
    report = str(report_dir.relative_to(plan.out))  # the page links it from --out
    return _step(commit, subject, date, version, record, answer, plan, cached, installed - started, finished - installed, report)


def _step(commit: str, subject: str, date: str, version: str | None, record: dict | None, answer: StepAnswer, plan: Plan,
          cached: bool, install_s: float, pytest_s: float, report: str | None) -> Step:
    names = terms(plan.fixed)
    term = "skip" if answer.exit_status == SKIP else names.new if answer.exit_status else names.old
    return Step(
        commit, subject, date, version, answer.bug_present, record["verdict"] if record else None, record["evidence"] if record else None, term,
        answer.exit_status, answer.reason, cached, round(install_s, 2), round(pytest_s, 2), report,
    )


def progress_line(step: Step) -> str:
    install = "cached" if step.cached else f"installed {step.install_s:.1f} s"
    return f"bisect step {step.commit[:10]} {step.subject[:60]!r}: {step.reason} -> {step.term} ({install}, pytest {step.pytest_s:.1f} s)"


def record_step(step: Step, out: Path) -> None:
    with (out / "steps.jsonl").open("a", encoding="utf-8") as steps:
        steps.write(json.dumps(asdict(step)) + "\n")


def main(argv: list[str]) -> int:
    """git bisect run's command: the step's exit status, or ABORT (stop the bisect) when the step
    itself failed, so that a harness error is never read as a commit's answer."""
    try:
        plan = Plan.read(Path(argv[0]))
        step = test_commit(Path(plan.clone), plan)  # git bisect run starts it there; by hand, never elsewhere
        record_step(step, Path(plan.out))
    except Exception as error:  # noqa: BLE001 - any of them must abort, not mark the commit
        traceback.print_exc()
        print(f"bisect step aborted: {type(error).__name__}: {error}", flush=True)
        return ABORT
    print(progress_line(step), flush=True)
    return step.exit_status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
