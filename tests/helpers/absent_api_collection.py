"""Collect suites/ once per library API the suites ask for, with that API made absent, as on a
release before it shipped; print one JSON line per fault.

`python -m tests.helpers.absent_api_collection` from the repository root. One process for every fault,
since each collection costs a fraction of the torch import a fresh process would repeat; the
suites' modules are dropped between collections so each one imports them again under its fault.
The API calls are found by `ast` in the suites' source (`library_api(...)` with literal
arguments), so a new guard is faulted without an edit here.
"""

from __future__ import annotations

import ast
import gc
import importlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITES = REPO / "suites"


@dataclass(frozen=True)
class ApiUse:
    """One name a suite takes from a library (name "" for the module itself)."""

    source: str  # file:line of the library_api call
    module: str
    name: str
    first_release: str


def api_uses(root: Path = SUITES) -> list[ApiUse]:
    """Every literal `library_api(...)` call under root, one entry per name it takes."""
    uses = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "library_api"):
                continue
            words = [arg.value for arg in node.args if isinstance(arg, ast.Constant)]
            keywords = {kw.arg: kw.value.value for kw in node.keywords if isinstance(kw.value, ast.Constant)}
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            module, names = words[0], words[1:] or [""]
            uses.extend(ApiUse(where, module, name, keywords["first_release"]) for name in names)
    return uses


@contextmanager
def absent(use: ApiUse) -> Iterator[None]:
    """The API gone, as on a release without it: an attribute deleted, or a module whose import fails."""
    if use.name:
        owner = importlib.import_module(use.module)
        value = getattr(owner, use.name)
        delattr(owner, use.name)
        try:
            yield
        finally:
            setattr(owner, use.name, value)
        return
    saved = sys.modules.get(use.module)
    sys.modules[use.module] = None  # type: ignore[assignment]  # import raises ModuleNotFoundError
    try:
        yield
    finally:
        if saved is None:
            del sys.modules[use.module]
        else:
            sys.modules[use.module] = saved


class CollectionReports:
    """What one collection ended with: errors and module-level skips, by node id."""

    def __init__(self) -> None:
        self.errors: dict[str, str] = {}
        self.skips: dict[str, str] = {}

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors[report.nodeid] = str(report.longrepr).strip().splitlines()[-1]
        elif report.skipped and isinstance(report.longrepr, tuple):
            self.skips[report.nodeid] = report.longrepr[2].removeprefix("Skipped: ")


def collect(use: ApiUse) -> dict[str, object]:
    """Collect suites/ with the API absent; the modules it imported dropped afterwards."""
    # Freeze what is alive now (torch, the libraries, pytest, what earlier collections left): pytest's
    # closing gc passes and the sweeps during the imports then walk only this collection's objects
    # (more than half of this helper's time, run alone). The process ends after the last collection.
    gc.freeze()
    reports = CollectionReports()
    with absent(use):
        # --assert=plain: nothing is asserted while collecting, so rewriting the modules again is waste.
        exit_code = pytest.main(
            ["--collect-only", "-qq", "--assert=plain", "-p", "no:cacheprovider", "--no-reports", str(SUITES)], plugins=[reports]
        )
    # Test modules are imported under their folder's name (suites/ is no package): drop by file.
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(SUITES)):
            del sys.modules[name]
    return {**vars(use), "exit": int(exit_code), "errors": reports.errors, "skips": reports.skips}


def importable(module: str) -> bool:
    """Whether this environment has the module (sam2, an optional extra, may be missing)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def main() -> int:
    faulted: set[tuple[str, str]] = set()
    for use in api_uses():
        if (use.module, use.name) in faulted:  # the same fault again: the same collection
            continue
        faulted.add((use.module, use.name))
        outcome = collect(use) if importable(use.module) else {**vars(use), "exit": None, "errors": {}, "skips": {}}
        print("RESULT " + json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
