"""Pure pieces of `python -m reports bisect`: what one step's results mean for git, and what git's
answer says. No git, no pytest: the table tests feed them plain values.

git bisect run reads the step's exit status: 0 the commit takes the old term, 1 the new one, 125
it cannot be tested (skip), anything above 127 aborts. Without --fixed the terms are git's own
(old `good`: no bug, new `bad`: the bug); with --fixed they are old `present`, new `fixed`, so the
answer is the first commit without the bug.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fixtures.known_bugs.verdicts import ERROR, NOT_OBSERVED, OBSERVED

OLD, NEW, SKIP, ABORT = 0, 1, 125, 128


@dataclass(frozen=True)
class Terms:
    old: str
    new: str


BUG_IS_NEW = Terms(old="good", new="bad")
FIX_IS_NEW = Terms(old="present", new="fixed")


def terms(fixed: bool) -> Terms:
    return FIX_IS_NEW if fixed else BUG_IS_NEW


@dataclass(frozen=True)
class StepAnswer:
    """What one commit's run says: whether the bug showed (None: cannot tell), git's exit status
    for it, and the reason in one line."""

    bug_present: bool | None
    exit_status: int
    reason: str


def step_answer(record: dict | None, kind: str, fixed: bool) -> StepAnswer:
    """From the bug's verdict record in results.json (None: the run left none) to git's answer.
    The bug's observation decides, not its verdict: a build between releases may have a version
    the registry cannot place. Never guessed: an error, a skip, an inconclusive run or a race
    that did not fire within its budget is a skip."""
    if record is None:
        return StepAnswer(None, SKIP, "the run left no verdict for the bug")
    observation = record.get("observation")
    if record["verdict"] == ERROR or observation == ERROR:
        return StepAnswer(None, SKIP, f"error: {record['detail']}")
    if observation == NOT_OBSERVED and kind == "race":
        return StepAnswer(None, SKIP, f"a race not seen within its budget proves nothing: {record['detail']}")
    if observation not in (OBSERVED, NOT_OBSERVED):
        return StepAnswer(None, SKIP, f"{observation}: {record['detail']}")
    present = observation == OBSERVED
    evidence = record.get("evidence") or "-"
    return StepAnswer(present, NEW if present != fixed else OLD, f"{'observed' if present else 'not observed'} ({evidence})")


FIRST_COMMIT = re.compile(r"^([0-9a-f]{40}) is the first (\S+) commit$", re.MULTILINE)
ONLY_SKIPPED = re.compile(r"could be any of:\n(?P<hashes>(?:[0-9a-f]{40}\n)+)")


@dataclass(frozen=True)
class GitAnswer:
    first: str | None  # the first commit with the new term
    candidates: tuple[str, ...]  # git's range when only skipped commits are left


def git_answer(output: str, new_term: str) -> GitAnswer:
    """Read `git bisect run`'s output: the first new-term commit, or the candidates it could not
    narrow (only skipped commits left); neither when it stopped for another reason."""
    for commit, term in FIRST_COMMIT.findall(output):
        if term == new_term:
            return GitAnswer(commit, ())
    skipped = ONLY_SKIPPED.search(output)
    return GitAnswer(None, tuple(skipped.group("hashes").split()) if skipped else ())


PULL_REQUEST = re.compile(r"\(#(\d+)\)|Merge pull request #(\d+)|\bPR #?(\d+)\b")


def pull_request(subject: str, issue_url: str) -> str | None:
    """The pull request a commit subject names (GitHub's squash "(#123)" or merge subject), as a
    link beside the bug's issue when that is on GitHub, else as "#123"."""
    found = PULL_REQUEST.search(subject)
    if not found:
        return None
    number = next(group for group in found.groups() if group)
    github = re.match(r"(https://github\.com/[^/]+/[^/]+)/", issue_url)
    return f"{github.group(1)}/pull/{number}" if github else f"#{number}"
