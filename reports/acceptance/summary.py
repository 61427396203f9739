"""`python -m reports acceptance`'s summary: per bug step and per bug the verdict, the evidence and
the GPUs its tests ran on, one combined line per bug over those steps, and the conformance step's
outcomes."""

from __future__ import annotations

from collections import Counter

from fixtures.devices.spec import too_few_gpus
from fixtures.known_bugs.verdicts import ERROR, FIXED, INCONCLUSIVE, NOT_AFFECTED, NOT_REPRODUCED, REGRESSED, REPRODUCED, SKIPPED, UNPLACED

# The combined verdict of a bug over both steps is the first of these that either step gave: an
# error first, then a sighting in either step (a sighting is a sighting, as within one run:
# fixtures/known_bugs/verdicts.py), then a decision without one, then what decided nothing.
# Regressed/reproduced and not-reproduced/fixed never meet for one release (one is affected).
WORSE_FIRST = (ERROR, REGRESSED, UNPLACED, REPRODUCED, NOT_REPRODUCED, FIXED, NOT_AFFECTED, INCONCLUSIVE, SKIPPED)


def gpus_by_bug(document: dict) -> dict[str, list[str]]:
    """Per bug id: the distinct `gpu` properties of its tests that ran on a GPU, sorted."""
    found: dict[str, set[str]] = {}
    for test in document["tests"]:
        properties = test.get("properties", {})
        if "known_bug" in properties and "gpu" in properties:
            found.setdefault(properties["known_bug"], set()).add(properties["gpu"])
    return {bug: sorted(gpus) for bug, gpus in found.items()}


def summary_lines(step: str, document: dict) -> list[str]:
    """One line per bug of one step's results.json: verdict, evidence, GPUs, what decided."""
    gpus = gpus_by_bug(document)
    lines = [f"[{step}] exit status {document['exit_status']}"]
    for record in document["verdicts"]:
        ran_on = ", ".join(gpus.get(record["bug_id"], [])) or "no GPU test ran"
        lines.append(
            f"  {record['bug_id']:<17} {record['verdict']:<15} {record['evidence'] or '-':<7} GPUs: {ran_on}"
            f" | {record['detail']}"
        )
    return lines


def conformance_lines(step: str, document: dict) -> list[str]:
    """The conformance step: its tests' outcomes, each test that failed, and why tests skipped."""
    tests = document["tests"]
    counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(Counter(test["outcome"] for test in tests).items()))
    lines = [f"[{step}] exit status {document['exit_status']}: {counts or 'no tests'}"]
    lines += [f"  {test['outcome']}: {test['nodeid']} | {test['message']}" for test in tests if test["outcome"] in ("failed", "error")]
    lines += [f"  skipped: {reason}" for reason in sorted({test["message"] for test in tests if test["outcome"] == "skipped"})]
    return lines


def missing_results_lines(step: str, problem: str) -> list[str]:
    """The summary of a step that left no readable results.json (pytest itself died)."""
    return [f"[{step}] no results.json (crashed?): {problem}"]


def worse(verdicts: list[str]) -> str:
    """The worst verdict; one these tools do not know counts as worst of all, to be looked at."""
    return min(verdicts, key=lambda verdict: WORSE_FIRST.index(verdict) if verdict in WORSE_FIRST else -1)


def combined_lines(documents: dict[str, dict | None]) -> list[str]:
    """One line per bug over every step (step name -> its results.json, None when it left none):
    the worse verdict wins, and a step without results counts as an error for every bug."""
    by_bug: dict[str, dict[str, str]] = {}
    short: dict[str, set[str]] = {}  # per bug: why its direct tests could not run on these GPUs
    for step, document in documents.items():
        for record in document["verdicts"] if document else []:
            by_bug.setdefault(record["bug_id"], {})[step] = record["verdict"]
            short.setdefault(record["bug_id"], set()).update(part for part in record["detail"].split("; ") if too_few_gpus(part))
        for test in document["tests"] if document else []:
            bug_id = test.get("properties", {}).get("known_bug")
            if bug_id and test["outcome"] == "skipped" and too_few_gpus(test["message"]):
                short.setdefault(bug_id, set()).add(test["message"])
    missing = [step for step, document in documents.items() if document is None]
    lines = ["[combined] the worse verdict of the steps" + (f"; {', '.join(missing)}: no results.json, counted as error" if missing else "")]
    for bug_id, verdicts in by_bug.items():
        each = {**verdicts, **dict.fromkeys(missing, ERROR)}
        parts = ", ".join(f"{step} {verdict}" for step, verdict in each.items())
        undecided = f"; UNDECIDED on too few GPUs: {'; '.join(sorted(short[bug_id]))}" if short.get(bug_id) else ""
        lines.append(f"  {bug_id:<17} {worse(list(each.values())):<15} ({parts}){undecided}")
    return lines
