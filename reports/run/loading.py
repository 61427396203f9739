"""Reading results.json files for the command-line tools, with one-line errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from fixtures.known_bugs.verdicts import VERDICTS
from reports.run.results import SCHEMA_VERSION

_SECTIONS = (("environment", dict), ("verdicts", list), ("tests", list))
# What the tools read of each verdict beside its bug_id and verdict, and the JSON types it may have.
_VERDICT_FIELDS = {"package": (str,), "installed": (str, type(None)), "evidence": (str, type(None)), "detail": (str,)}
_OPTIONAL_VERDICT_FIELDS = {"title": (str,)}  # the matrix's row heading, where given
_FIELD_TYPES = "package, detail: strings; installed, evidence: strings or null; title, if given: a string"


class ResultsError(ValueError):
    """A file that is not a results.json this version of the tools can read."""


def check_results(document: object, source: str) -> dict:
    """The document itself, or a ResultsError saying why a tool cannot read it."""
    if not isinstance(document, dict) or "schema_version" not in document:
        raise ResultsError(f"{source}: not a harness results file (no schema_version)")
    if type(document["schema_version"]) is not int or document["schema_version"] != SCHEMA_VERSION:  # true == 1 in Python
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
    gpus = environment.get("gpus", [])  # absent: none listed
    if not isinstance(gpus, list) or not all(isinstance(gpu, dict) and isinstance(gpu.get("name"), str) for gpu in gpus):
        return "'environment' 'gpus' must be a JSON array of objects with a 'name' string"
    if not isinstance(environment.get("simulated_runner", ""), (str, type(None))):
        return "'environment' 'simulated_runner' must be a string or null"
    ci = environment.get("ci", {})
    if not isinstance(ci, dict) or not all(isinstance(value, str) for value in ci.values()):
        return "'environment' 'ci' must be a JSON object of strings"
    return ""


def verdict_problem(record: object) -> str:
    if not isinstance(record, dict) or not isinstance(record.get("bug_id"), str):
        return f"a 'verdicts' entry without a 'bug_id' string: {json.dumps(record)[:80]}"
    if record.get("verdict") not in VERDICTS:
        return f"{record['bug_id']}: verdict {record.get('verdict')!r} is none of {', '.join(VERDICTS)}"
    wrong = [name for name, kinds in _VERDICT_FIELDS.items() if name not in record or not isinstance(record[name], kinds)]
    wrong += [name for name, kinds in _OPTIONAL_VERDICT_FIELDS.items() if name in record and not isinstance(record[name], kinds)]
    if wrong:
        return f"{record['bug_id']}: {', '.join(wrong)} missing or of another type ({_FIELD_TYPES})"
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
    except RecursionError:
        raise ResultsError(f"{path}: not a harness results file (JSON nested too deeply to read)") from None
    return check_results(document, str(path))
