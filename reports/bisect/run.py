"""`python -m reports bisect`: which commit brought a known bug, or (--fixed) took it away.

git's own engine does the search: the repository is cloned into a temporary folder (never the
user's clone), both ends are tested and must behave as claimed, then `git bisect run` calls
reports/bisect/step.py at each commit it picks. bisect.json and bisect.html go under --out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from fixtures.known_bugs.registry import Bug, RegistryError, load_registry
from reports import REPOSITORY
from reports.bisect.answers import GitAnswer, Terms, git_answer, pull_request, terms
from reports.bisect.page import bisect_document, bisect_html
from reports.bisect.step import Plan, Step, WrongBuild, commit_facts, progress_line, record_step, test_commit
from reports.scan.run import last_line, package_policy, say_flushed

NAMED, ENDS_DISAGREE, BAD_INPUT, ONLY_SKIPPED = 0, 1, 2, 3


class BisectError(ValueError):
    """Bad input: one line for the user, before any install."""


def git(clone: Path, *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *arguments], cwd=clone, capture_output=True, text=True, check=check)


def clone_repository(repo: str, into: Path) -> Path:
    """A clone of REPO (URL, clone or bare mirror) with no files checked out; a local one shares
    its objects instead of copying them."""
    local = Path(repo).expanduser()
    shared = ["--shared"] if local.exists() else []
    source = str(local.resolve()) if local.exists() else repo
    done = subprocess.run(["git", "clone", "--quiet", "--no-checkout", *shared, source, str(into)], capture_output=True, text=True)
    if done.returncode != 0:
        raise BisectError(f"--repo {repo}: cannot clone: {last_line(done.stderr)}")
    return into


def resolve(clone: Path, option: str, ref: str) -> str:
    """The full hash of REF (a hash, tag, or a branch of the cloned repository)."""
    for candidate in (ref, f"origin/{ref}"):
        done = git(clone, "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}", check=False)
        if done.returncode == 0:
            return done.stdout.strip()
    raise BisectError(f"{option} {ref}: unknown ref in the repository")


def check_order(clone: Path, older: tuple[str, str, str], newer: tuple[str, str, str]) -> None:
    """older/newer: (option, ref, hash); the older end must be an ancestor of the newer one."""
    if git(clone, "merge-base", "--is-ancestor", older[2], newer[2], check=False).returncode != 0:
        raise BisectError(f"{older[0]} {older[1]} is not an ancestor of {newer[0]} {newer[1]}")


def check_package(clone: Path, package: str, option: str, ref: str, commit: str) -> None:
    """The package's import folder at the commit (flat or src layout)."""
    for layout in (f"{package}/__init__.py", f"src/{package}/__init__.py"):
        if git(clone, "cat-file", "-e", f"{commit}:{layout}", check=False).returncode == 0:
            return
    raise BisectError(f"{option} {ref}: the repository has no {package} package there (no {package}/__init__.py)")


def chosen_bug(registry_path: Path, package: str, bug_id: str) -> Bug:
    try:
        registry = load_registry(registry_path)
    except RegistryError as error:
        raise BisectError(str(error)) from None
    if bug_id not in registry:
        raise BisectError(f"--bug: unknown bug id {bug_id}; known: {', '.join(registry)}")
    if registry[bug_id].package != package:
        raise BisectError(f"--bug: {bug_id} is a {registry[bug_id].package} bug, not a {package} one")
    return registry[bug_id]


def end_problem(option: str, ref: str, step: Step, want_present: bool) -> str | None:
    """Why an end does not behave as claimed (None: it does)."""
    if step.bug_present is None:
        return f"cannot tell whether the bug is at {option} {ref}: {step.reason}"
    if step.bug_present != want_present:
        return (
            f"the bug is {'not ' if want_present else ''}observed at {option} {ref} ({step.reason}); "
            f"{option} must name a commit {'with' if want_present else 'without'} it"
        )
    return None


def run_git_bisect(clone: Path, names: Terms, new: str, old: str, plan_path: Path, say: Callable[[str], None]) -> str:
    """git bisect start + run; git's output (the step lines are echoed as they come)."""
    started = git(clone, "bisect", "start", f"--term-old={names.old}", f"--term-new={names.new}", new, old)
    output = started.stdout
    if git_answer(output, names.new).first:  # adjacent ends: git answers at once
        return output
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")]))}
    # -P: git runs each step inside the clone, whose top-level folders (a `fixtures/` package, say)
    # would otherwise shadow the harness's; a step that cannot import exits 1, which git reads as "bad".
    command = ["git", "bisect", "run", sys.executable, "-P", "-m", "reports.bisect.step", str(plan_path)]
    with subprocess.Popen(command, cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as running:
        for line in running.stdout:
            output += line
            if line.startswith(("bisect step", "bisect found", "bisect run failed", "bisect run cannot")):
                say(line.rstrip("\n"))
    return output


def bisect(
    package: str, repo: str, good: str, bad: str, bug_id: str, *, fixed: bool, out: Path, cache: Path, registry_path: Path,
    pytest_args: list[str], say: Callable[[str], None] = say_flushed,
) -> int:
    started = time.perf_counter()
    names = terms(fixed)
    with tempfile.TemporaryDirectory(prefix="harness-bisect-") as scratch:
        try:
            bug = chosen_bug(registry_path, package, bug_id)
            if bug.kind == "race":  # a step that does not see it is a skip: no commit can be shown without it
                raise BisectError(f"--bug: {bug.id} is a race: a run that does not see it proves nothing, so no commit can be shown without it")
            policy = package_policy(package)
            if policy.bisect_refusal or policy.pairs is not None:  # bisect builds one package over the environment's torch
                raise BisectError(policy.bisect_refusal or f"{package}: bisect builds commits over the environment's torch; {package} brings its own")
            install_env = policy.install_env
            clone = clone_repository(repo, Path(scratch) / "clone")
            good_end = ("--good", good, resolve(clone, "--good", good))
            bad_end = ("--bad", bad, resolve(clone, "--bad", bad))
            older, newer = (bad_end, good_end) if fixed else (good_end, bad_end)
            check_order(clone, older, newer)
            for option, ref, commit in (good_end, bad_end):
                check_package(clone, package, option, ref, commit)
            if good_end[2] == bad_end[2]:  # git bisect would test the one commit as both ends
                raise BisectError(f"--good {good} and --bad {bad} are the same commit: nothing lies between them")
            out.mkdir(parents=True, exist_ok=True)
        except BisectError as error:
            print(f"error: {error}", file=sys.stderr)
            return BAD_INPUT
        except OSError as error:
            print(f"error: --out {out}: {error.strerror}", file=sys.stderr)
            return BAD_INPUT
        (out / "steps.jsonl").unlink(missing_ok=True)
        plan = Plan(package, bug.id, str(registry_path), fixed, str(out), str(cache), pytest_args, install_env, str(clone))
        plan_path = Path(scratch) / "plan.json"
        plan_path.write_text(json.dumps(asdict(plan)), encoding="utf-8")
        problems = []
        try:
            for (option, ref, commit), want_present in ((bad_end, True), (good_end, False)):
                git(clone, "checkout", "--quiet", "--detach", commit)
                step = test_commit(clone, plan)
                record_step(step, out)
                say(progress_line(step) + f" [{option} end]")
                problems.append(end_problem(option, ref, step, want_present))
        except WrongBuild as error:
            problems.append(str(error))
        problems = [problem for problem in problems if problem]
        answer, output = GitAnswer(None, ()), ""
        if not problems:
            output = run_git_bisect(clone, names, newer[2], older[2], plan_path, say)
            answer = git_answer(output, names.new)
            if answer.first is None and not answer.candidates:
                problems.append(f"git bisect stopped without an answer: {last_line(output)}")
        first = describe(clone, answer.first, bug) if answer.first else None
        candidates = [describe(clone, commit, bug) for commit in answer.candidates]
    status = NAMED if first else ONLY_SKIPPED if candidates else ENDS_DISAGREE
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text(encoding="utf-8").splitlines()]
    document = bisect_document(
        package=package, repo=repo, bug=bug, fixed=fixed, names=names, good=good_end[2], bad=bad_end[2], first=first,
        candidates=candidates, problem="; ".join(problems) or None, steps=steps, wall_s=round(time.perf_counter() - started, 1),
        exit_status=status,
    )
    (out / "bisect.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    (out / "bisect.html").write_text(bisect_html(document), encoding="utf-8")
    for line in summary_lines(document):
        say(line)
    say(f"bisect: {out / 'bisect.json'}, {out / 'bisect.html'}")
    return status


def describe(clone: Path, commit: str, bug: Bug) -> dict:
    """Full hash, subject, date and the pull request the subject names."""
    full, subject, date = commit_facts(clone, commit)
    return {"commit": full, "subject": subject, "date": date, "pull_request": pull_request(subject, bug.issue)}


def summary_lines(document: dict) -> list[str]:
    answer_key = document["answer_key"]
    lines = [f"bisect {document['bug_id']} in {document['package']} ({document['outcome']}) in {document['wall_s']:.0f} s"]
    if document[answer_key]:
        found = document[answer_key]
        pull_request = ", " + found["pull_request"] if found["pull_request"] else ""
        lines.append(f"{answer_key}: {found['commit']} {found['subject']} ({found['date']}{pull_request})")
    for candidate in document["candidates"]:
        lines.append(f"  candidate {candidate['commit']} {candidate['subject']}")
    if document["problem"]:
        lines.append(f"no answer: {document['problem']}")
    return lines
