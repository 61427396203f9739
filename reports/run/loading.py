"""Reading results.json files for the command-line tools, with one-line errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from fixtures.known_bugs.verdicts import VERDICTS
from reports.run.results import SCHEMA_VERSION

_SECTIONS = (("environment", dict), ("verdicts", list), ("tests", list))


class ResultsError(ValueError):
    """A file that is not a results.json this version of the tools can read."""


def check_results(document: object, source: str) -> dict:
    """The document itself, or a ResultsError saying why a tool cannot read it."""
    if not isinstance(document, dict) or "schema_version" not in document:
        raise ResultsError(f"{source}: not a harness results file (no schema_version)")
    if document["schema_version"] != SCHEMA_VERSION:
        raise ResultsError(
            f"{source}: schema_version {document['schema_version']!r}; these tools read {SCHEMA_VERSION}"
        )
    for name, kind in _SECTIONS:
        if not isinstance(document.get(name), kind):
            raise ResultsError(f"{source}: '{name}' must be a JSON {'object' if kind is dict else 'array'}")
    problem = environment_problem(document["environment"]) or next(
        filter(None, (*map(verdict_problem, document["verdicts"]), *map(test_problem, document["tests"]))), None
    )
    if problem:
        raise ResultsError(f"{source}: {problem}")
    counted = Counter(record["bug_id"] for record in document["verdicts"])
    if twice := sorted(bug_id for bug_id, count in counted.items() if count > 1):  # which one would a page show?
        raise ResultsError(f"{source}: more than one verdict for {', '.join(twice)}")
    return document


def environment_problem(environment: dict) -> str:
    """What the tools read of the environment, where it is missing or of the wrong kind ("" when none)."""
    if not isinstance(environment.get("packages"), dict):
        return "'environment' has no 'packages' object"
    if not isinstance(environment.get("gpus", []), list):
        return "'environment' 'gpus' must be a JSON array"
    return ""


def verdict_problem(record: object) -> str:
    if not isinstance(record, dict) or not isinstance(record.get("bug_id"), str):
        return f"a 'verdicts' entry without a 'bug_id' string: {json.dumps(record)[:80]}"
    if record.get("verdict") not in VERDICTS:
        return f"{record['bug_id']}: verdict {record.get('verdict')!r} is none of {', '.join(VERDICTS)}"
    return ""


def test_problem(record: object) -> str:
    if not isinstance(record, dict) or not all(isinstance(record.get(key), str) for key in ("nodeid", "outcome")):
        return f"a 'tests' entry without 'nodeid' and 'outcome' strings: {json.dumps(record)[:80]}"
    return ""


def load_results(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ResultsError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not JSON (not UTF-8 text)") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ResultsError(f"{path}: not JSON ({error})") from None
    return check_results(document, str(path))
