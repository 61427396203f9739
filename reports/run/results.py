"""The results document (reports/out/results.json): pure builders, schema in README.md."""

from __future__ import annotations

import dataclasses

import pytest

from fixtures.known_bugs.outcomes import collection_error, skip_reason
from fixtures.known_bugs.registry import Bug
from fixtures.known_bugs.verdicts import BugVerdict
from fixtures.known_bugs.versions import AffectedStatus

SCHEMA_VERSION = 1
# Which phase's word wins when a test's reports disagree: an error in teardown spoils a pass.
_PRECEDENCE = ("passed", "xpassed", "skipped", "xfailed", "failed", "error")


def phase_outcome(report: pytest.TestReport) -> str:
    """One phase's outcome in junit's words: passed, failed, error, skipped, xfailed, xpassed."""
    xfail = hasattr(report, "wasxfail")
    # xdist reports a crashed worker's test with when="???": a failure of the test itself.
    if report.when in ("setup", "teardown"):
        if report.failed:
            return "error"
        return "skipped" if report.skipped else "passed"
    if report.skipped:
        return "xfailed" if xfail else "skipped"
    if report.passed:
        return "xpassed" if xfail else "passed"
    return "failed"


def report_message(report: pytest.TestReport) -> str:
    """The line a reviewer reads first: the xfail or skip reason, or the failure's crash line."""
    if hasattr(report, "wasxfail"):
        return report.wasxfail
    if report.skipped and isinstance(report.longrepr, tuple):
        return skip_reason(report)
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    return report.longreprtext.strip().splitlines()[0] if report.longreprtext.strip() else ""


def merge_test_record(record: dict | None, report: pytest.TestReport) -> dict:
    """Fold one phase's report into the test's record."""
    outcome = phase_outcome(report)
    record = record or {"nodeid": report.nodeid, "outcome": "passed", "duration_s": 0.0, "message": "", "properties": {}}
    record["duration_s"] = round(record["duration_s"] + report.duration, 4)
    record["properties"].update({name: value for name, value in report.user_properties})
    if _PRECEDENCE.index(outcome) >= _PRECEDENCE.index(record["outcome"]) and (outcome != "passed" or report.when == "call"):
        record["outcome"] = outcome
        message = report_message(report)
        if message:
            record["message"] = message
    return record


def collect_record(report: pytest.CollectReport) -> dict:
    """A module that failed to collect (`error`) or skipped whole (`skipped`, with its reason)."""
    outcome, message = ("skipped", skip_reason(report)) if report.skipped else ("error", collection_error(report))
    return {"nodeid": report.nodeid, "outcome": outcome, "duration_s": 0.0, "message": message, "properties": {"collection": "module"}}


def verdict_record(bug: Bug, status: AffectedStatus, verdict: BugVerdict) -> dict:
    return {
        **dataclasses.asdict(verdict),
        "tests": list(verdict.tests),
        "title": bug.title,
        "package": bug.package,
        "installed": status.version,
        "affected_range": str(bug.affected),
        "affected": status.affected,
        "decided_by": status.basis,
        "disagreement": status.disagreement,
        "first_fixed": str(bug.first_fixed) if bug.first_fixed else None,
        "kind": bug.kind,
        "issue": bug.issue,
        "fix": bug.fix,
        "notes": bug.notes,
    }


def results_document(
    *, started: str, finished: str, exit_status: int, environment: dict, verdicts: list[dict], tests: list[dict], sections: dict
) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "started": started,
        "finished": finished,
        "exit_status": exit_status,
        "environment": environment,
        "verdicts": verdicts,
        "tests": tests,
        **sections,
    }
