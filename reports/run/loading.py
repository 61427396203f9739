"""Reading results.json files for the command-line tools, with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

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
    return document


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
