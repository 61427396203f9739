"""The fault x oracle matrix printed at the end of `pytest tests`: one row per fault-injection test,
the oracles its `catches` marker names, and whether the oracle flagged the fault.

Rows are built from test reports (not items), so pytest-xdist workers' results count the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# The user_properties key under which tests/conftest.py puts each oracle ref of a fault test.
CATCHES_PROPERTY = "catches"
FAULT_PREFIX = "test_fault_"
CAUGHT, MISSED, NOT_RUN = "caught", "missed", "not run"
MAX_FAULT_WIDTH = 72  # long parametrization ids (whole error messages) are cut to keep rows readable


@dataclass(frozen=True)
class FaultRow:
    """One run of a fault test (one parametrization); `test` is its function's nodeid, so the
    distinct faults can be counted apart from their parametrizations."""

    fault: str
    oracles: tuple[str, ...]
    verdict: str
    test: str = ""


def catches_refs(user_properties: Iterable[tuple[str, object]]) -> tuple[str, ...]:
    return tuple(str(value) for key, value in user_properties if key == CATCHES_PROPERTY)


def fault_name(nodeid: str) -> str:
    """The injected fault, readable: "tests/f.py::test_fault_lost_metadata[x]" -> "lost metadata [x]"."""
    test = nodeid.rsplit("::", 1)[-1]
    name, bracket, parameters = test.partition("[")
    name = name.removeprefix(FAULT_PREFIX).removeprefix("test_").replace("_", " ")
    return clip(f"{name} [{parameters}" if bracket else name, MAX_FAULT_WIDTH)


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def verdict(outcomes: Sequence[str]) -> str:
    """The verdict of one test from the outcomes of its phases (setup, call, teardown): a failure
    anywhere means the fault went unflagged (or the test broke), a passed call that it was caught,
    and a skip that it was not run."""
    if "failed" in outcomes:
        return MISSED
    return NOT_RUN if "skipped" in outcomes else CAUGHT


def render(rows: Sequence[FaultRow]) -> list[str]:
    """The matrix as lines: verdict, fault, then each oracle on a line of its own; a count line
    last. No lines for no rows."""
    if not rows:
        return []
    fault_width = max(len("fault"), *(len(row.fault) for row in rows))
    verdict_width = max(len("verdict"), *(len(row.verdict) for row in rows))
    lines = [f"{'verdict':<{verdict_width}}  {'fault':<{fault_width}}  oracle"]
    for row in sorted(rows, key=lambda row: (row.verdict != MISSED, row.fault)):
        oracles = row.oracles or ("(no oracle named)",)
        lines.append(f"{row.verdict:<{verdict_width}}  {row.fault:<{fault_width}}  {oracles[0]}")
        lines.extend(f"{'':<{verdict_width}}  {'':<{fault_width}}  {oracle}" for oracle in oracles[1:])
    lines.append(summary(rows))
    return lines


def function_of(nodeid: str) -> str:
    """The test function's nodeid: "f.py::test_x[a]" -> "f.py::test_x"."""
    return nodeid.partition("[")[0]


def summary(rows: Sequence[FaultRow]) -> str:
    """Distinct faults (test functions), their runs (parametrizations), distinct oracles named,
    and the runs' verdicts."""
    counts = {name: sum(row.verdict == name for row in rows) for name in (CAUGHT, MISSED, NOT_RUN)}
    oracles = {oracle for row in rows for oracle in row.oracles}
    faults = {row.test or row.fault for row in rows}
    shown = ", ".join(f"{count} {name}" for name, count in counts.items() if count or name != NOT_RUN)
    return f"{len(faults)} faults in {len(rows)} runs (parametrizations) against {len(oracles)} oracles: {shown}"
