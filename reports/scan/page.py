"""scan.json and scan.html of `python -m reports scan`: pure builders. The page is drawn from the
document alone, so it can be redrawn from a kept scan.json."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from reports.pages.html import standalone_page, verdict_badge
from reports.scan.ranges import BugScan, Unsettled, Window, outcome_line, window_words

SCAN_SCHEMA_VERSION = 2  # 2: errors and undecided per bug, outcome


def _unsettled_entries(items: tuple[Unsettled, ...]) -> list[dict]:
    return [{"release": item.release, "verdict": item.verdict, "reason": item.reason} for item in items]


def bug_entry(bug: BugScan) -> dict:
    return {
        "bug_id": bug.bug_id,
        "title": bug.title,
        "registry": {"affected": bug.registry_affected_range, "first_fixed": bug.registry_first_fixed},
        "measured": {
            "first_affected": bug.first_affected,
            "first_fixed": bug.first_fixed,
            "windows": [{"first_affected": w.first_affected, "first_fixed": w.first_fixed, "last_seen": w.last_seen} for w in bug.windows],
        },
        "row": [
            {"release": release, "verdict": verdict, "registry_affected": bug.registry_affected[release]}
            for release, verdict in bug.verdicts.items()
        ],
        "disagreements": [
            {"release": d.release, "verdict": d.verdict, "registry_affected": d.registry_affected, "reason": d.reason}
            for d in bug.disagreements
        ],
        "errors": _unsettled_entries(bug.errors),
        "undecided": _unsettled_entries(bug.undecided),
    }


def scan_document(
    package: str, registry: str, runs: list[dict], scans: list[BugScan], stopped: str | None, exit_status: int, failed: Sequence[str] = ()
) -> dict:
    """runs: one dict per scanned release, oldest first (release, verdicts, timings, pytest exit);
    failed: the releases whose run failed where no verdict explains it."""
    return {
        "scan_schema_version": SCAN_SCHEMA_VERSION,
        "package": package,
        "registry": registry,
        "exit_status": exit_status,
        "stopped": stopped,
        "outcome": outcome_line(scans, stopped, failed),
        "failed_runs": list(failed),
        "releases": [{**run, "report": f"{package}-{run['release']}/report.html"} for run in runs],
        "bugs": [bug_entry(bug) for bug in scans],
    }


# What frames a release on the page, first listed wins: (scan.json key, tick class, mark class,
# mark prefix, what the heading counts).
PROBLEMS = (
    ("disagreements", "scan-disagrees", "scan-disagree-mark", "&ne; registry", "disagreement(s)"),
    ("errors", "scan-errored", "scan-error-mark", "error", "errored"),
    ("undecided", "scan-undecided", "scan-undecided-mark", "undecided", "undecided"),
)


def _tick(cell: dict, href: str, problem: tuple[str, str, str, dict] | None, registry_first_fixed: str) -> str:
    """problem: (tick class, mark class, mark prefix, the scan.json entry) or None."""
    band = "scan-band-affected" if cell["registry_affected"] else "scan-band-clear"
    band_title = "registry: affected" if cell["registry_affected"] else "registry: not affected"
    fixed_mark = '<div class="scan-fixed-mark">registry first fixed</div>' if cell["release"] == registry_first_fixed else ""
    mark, classes = "", "scan-tick"
    if problem:
        tick_class, mark_class, prefix, entry = problem
        mark, classes = f'<div class="{mark_class}">{prefix}: {escape(entry["reason"])}</div>', f"scan-tick {tick_class}"
    return (
        f'<div class="{classes}" data-release="{escape(cell["release"])}" data-verdict="{escape(cell["verdict"] or "")}">'
        f'<div class="scan-release">{escape(cell["release"])}</div>{verdict_badge(cell["verdict"], href=href)}'
        f'<div class="{band}" title="{band_title}"></div>{fixed_mark}{mark}</div>'
    )


def _bug_section(bug: dict, reports: dict[str, str]) -> str:
    problems: dict[str, tuple[str, str, str, dict]] = {}
    for key, tick_class, mark_class, prefix, _ in PROBLEMS:
        for item in bug[key]:
            problems.setdefault(item["release"], (tick_class, mark_class, prefix, item))
    ticks = "".join(
        _tick(cell, reports[cell["release"]], problems.get(cell["release"]), bug["registry"]["first_fixed"])
        for cell in bug["row"]
    )
    measured, registry = bug["measured"], bug["registry"]
    newest = bug["row"][-1]["release"] if bug["row"] else ""
    windows = ", ".join(window_words(Window(**window), newest) for window in measured["windows"]) or "none"
    registry_first = next((cell["release"] for cell in bug["row"] if cell["registry_affected"]), "-")
    counts = [f"{len(bug[key])} {counted}" for key, *_, counted in PROBLEMS if bug[key]]
    verdict = (
        f'<span class="verdict verdict-regressed">{escape(", ".join(counts))}</span>'
        if counts
        else '<span class="verdict verdict-skipped">no release scanned</span>'
        if not bug["row"]
        else '<span class="verdict verdict-fixed">agrees with the registry</span>'
    )
    facts = (
        '<table class="harness-table scan-facts"><tr><th></th><th>first affected (of those scanned)</th><th>first fixed</th><th>range</th></tr>'
        f"<tr><th>measured</th><td>{escape(measured['first_affected'] or '-')}</td><td>{escape(measured['first_fixed'] or '-')}</td>"
        f"<td>seen from {escape(windows)} (first fixed excluded)</td></tr>"
        f"<tr><th>registry</th><td>{escape(registry_first)}</td><td>{escape(registry['first_fixed'])}</td><td><code>{escape(registry['affected'])}</code></td></tr></table>"
    )
    return (
        f'<section class="scan-bug" data-bug="{escape(bug["bug_id"])}"><h2><code>{escape(bug["bug_id"])}</code> {verdict}</h2>'
        f'<div class="bug-title">{escape(bug["title"])}</div><div class="scan-timeline">{ticks}</div>{facts}</section>'
    )


def scan_html(document: dict) -> str:
    reports = {run["release"]: run["report"] for run in document["releases"]}
    stopped = (
        f'<p class="scan-stopped"><span class="verdict verdict-regressed">scan stopped</span> {escape(document["stopped"])}</p>'
        if document["stopped"]
        else ""
    )
    legend = (
        '<p class="muted">Releases oldest first (PEP 440). Each verdict links to that release\'s report. '
        'The bar under a release is the registry\'s range: <span class="scan-key scan-band-affected"></span> affected, '
        '<span class="scan-key scan-band-clear"></span> not affected. A red frame marks a release where the '
        'measured verdict and the registry disagree, a purple one a release whose run errored, a dashed grey one a '
        'release where the bug could not be decided: neither of the last two confirms the registry. '
        f'Registry: <code>{escape(document["registry"])}</code>.</p>'
    )
    outcome = f'<p class="scan-outcome">Scan {escape(document["outcome"])}.</p>'
    sections = "".join(_bug_section(bug, reports) for bug in document["bugs"])
    return standalone_page(f"Release scan: {document['package']}", stopped + outcome + legend + sections)
