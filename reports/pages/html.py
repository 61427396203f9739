"""HTML fragments of results data: the verdict table, the sweep summary, a standalone page.

Pure functions from results.json records to strings; every value from a record is escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

VERDICTS_CSS = Path(__file__).with_name("verdicts.css")
SWEEP_OUTCOMES = ("finding", "inconclusive", "clean")


def link(url: str | None, text: str) -> str:
    """An external link that opens beside the report, or a dash when there is no address."""
    if not url:
        return '<span class="muted">&mdash;</span>'
    return f'<a href="{escape(url)}" target="_blank" rel="noopener">{escape(text)}</a>'


def upstream_label(kind: str, url: str) -> str:
    """'issue 8587' from https://github.com/pytorch/vision/issues/8587."""
    return f"{kind} {url.rstrip('/').rsplit('/', 1)[-1]}"


def verdict_badge(verdict: str | None, href: str | None = None) -> str:
    """The verdict as a coloured label (CSS class verdict-<verdict>), a link when href is given."""
    if verdict is None:
        return '<span class="verdict-none">&mdash;</span>'
    badge = f'<span class="verdict verdict-{escape(verdict)}">{escape(verdict)}</span>'
    return f'<a href="{escape(href)}">{badge}</a>' if href else badge


def evidence_label(evidence: str | None) -> str:
    """direct / simulated / proxy as a label coloured by strength (CSS class evidence-<kind>)."""
    if not evidence:
        return '<span class="verdict-none">&mdash;</span>'
    return f'<span class="evidence evidence-{escape(evidence)}">{escape(evidence)}</span>'


def _affected_note(record: dict) -> str:
    word = {True: "affected", False: "not affected", None: "cannot tell"}[record["affected"]]
    disagreement = record.get("disagreement")  # absent from files written before it existed
    against = f'<div class="disagreement">{escape(disagreement)}</div>' if disagreement else ""
    return f'<div class="muted">{word} ({escape(record["decided_by"])})</div>{against}'


def _errored_tests(record: dict) -> str:
    """For an `error` verdict, the tests that errored (record["tests"] holds exactly those)."""
    if record["verdict"] != "error" or not record["tests"]:
        return ""
    items = "".join(f"<li><code>{escape(nodeid)}</code></li>" for nodeid in record["tests"])
    return f'<ul class="errored-tests">{items}</ul>'


# A class per cell of a verdict row, so that each page can lay the columns out as it needs.
VERDICT_COLUMNS = tuple(f"cell-{name}" for name in ("bug", "verdict", "evidence", "installed", "affected", "fixed-in", "upstream", "detail"))


def verdict_row(record: dict) -> str:
    installed = record["installed"] or "not installed"
    cells = [
        f'<code>{escape(record["bug_id"])}</code><div class="bug-title" title="{escape(record["title"])}">{escape(record["title"])}</div>',
        verdict_badge(record["verdict"]),
        evidence_label(record["evidence"]),
        f'{escape(record["package"])} {escape(installed)}',
        f'<code>{escape(record["affected_range"])}</code>{_affected_note(record)}',
        escape(record["first_fixed"] or "no release yet"),
        link(record["issue"], upstream_label("issue", record["issue"]))
        + (f'<br>{link(record["fix"], upstream_label("fix", record["fix"]))}' if record["fix"] else ""),
        f'<div class="detail-text">{escape(record["detail"])}</div>' + _errored_tests(record),
    ]
    tds = "".join(f'<td class="{column}">{cell}</td>' for column, cell in zip(VERDICT_COLUMNS, cells))
    return f'<tr class="verdict-row verdict-{escape(record["verdict"])}" data-bug="{escape(record["bug_id"])}">{tds}</tr>'


def verdict_table(records: list[dict]) -> str:
    """One row per known bug: what this run concludes, and on which release."""
    if not records:
        return '<p class="muted">No known-bug verdicts in this run.</p>'
    header = "".join(
        f"<th>{name}</th>"
        for name in ("Bug", "Verdict", "Evidence", "Installed", "Affected range", "Fixed in", "Upstream", "Detail")
    )
    rows = "".join(verdict_row(record) for record in records)
    return f'<table class="harness-table verdict-table"><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>'


def sweep_outcome(entry: dict) -> str:
    """finding, inconclusive or clean (fixtures/sweeps/plugin.py calls the field "result")."""
    return str(entry.get("result") or entry.get("outcome") or entry.get("kind") or "unknown")


def _sweep_row(entry: dict) -> str:
    outcome = sweep_outcome(entry)
    triage = entry.get("triaged")
    detail = escape(str(entry.get("detail", ""))) + (f'<div class="muted">triaged: {escape(str(triage))}</div>' if triage else "")
    cells = [
        f'<code>{escape(str(entry.get("sweep", "")))}</code>',
        f'<code>{escape(str(entry.get("callable", "?")))}</code>'
        + (f'<div class="muted">{escape(str(entry["way"]))}</div>' if entry.get("way") else ""),
        escape(str(entry.get("device", ""))),
        escape(outcome + (" (triaged)" if triage else "")),
        detail,
    ]
    tds = "".join(f"<td>{cell}</td>" for cell in cells)
    return f'<tr class="sweep-{escape(outcome)}">{tds}</tr>'


def _sweep_table(entries: list[dict]) -> str:
    header = "".join(f"<th>{name}</th>" for name in ("Sweep", "Callable", "Device", "Outcome", "Detail"))
    rows = "".join(_sweep_row(entry) for entry in sorted(entries, key=lambda entry: str(entry.get("callable"))))
    return f'<table class="harness-table sweeps-table"><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>'


def sweeps_summary(sweeps: object) -> str:
    """The tally, then new (untriaged) findings in full; triaged findings and inconclusive
    results folded away, since a long list of them would push everything else off the page."""
    entries = [entry for entry in sweeps if isinstance(entry, dict)] if isinstance(sweeps, list) else []
    if not entries:
        return '<p class="muted sweeps-none">No sweep results in this run.</p>'
    counts = {outcome: 0 for outcome in SWEEP_OUTCOMES}
    for entry in entries:
        counts[sweep_outcome(entry)] = counts.get(sweep_outcome(entry), 0) + 1
    tally = ", ".join(f"{count} {outcome}" for outcome, count in counts.items())
    findings = [entry for entry in entries if sweep_outcome(entry) == "finding"]
    groups = {
        "new": [entry for entry in findings if not entry.get("triaged")],
        "triaged": [entry for entry in findings if entry.get("triaged")],
        "inconclusive": [entry for entry in entries if sweep_outcome(entry) == "inconclusive"],
    }
    parts = [f'<p class="sweeps-tally">{len(entries)} sweep results (callable x sweep x device x way): {escape(tally)}.</p>']
    if groups["new"]:
        parts.append(f'<p class="sweep-new">New findings ({len(groups["new"])}):</p>{_sweep_table(groups["new"])}')
    else:
        parts.append('<p class="sweep-new">No new finding.</p>')
    for key, title in (("triaged", "Triaged findings"), ("inconclusive", "Inconclusive")):
        if groups[key]:
            parts.append(f'<details class="sweeps-{key}"><summary>{title} ({len(groups[key])})</summary>{_sweep_table(groups[key])}</details>')
    return "".join(parts)


def skipped_tests_by_reason(groups: dict[str, list[str]]) -> str:
    """The skipped tests, one click away and grouped by reason (most tests first): on a CPU run
    hundreds of them (one per device the machine lacks) would otherwise come before what matters."""
    if not groups:
        return ""
    total = sum(len(nodeids) for nodeids in groups.values())
    reasons = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    items = "".join(
        f'<details class="skip-reason"><summary>{len(nodeids)} &times; {escape(reason)}</summary>'
        f'<ul>{"".join(f"<li><code>{escape(nodeid)}</code></li>" for nodeid in nodeids)}</ul></details>'
        for reason, nodeids in reasons
    )
    return f'<details class="skipped-tests"><summary>{total} skipped tests, {len(groups)} reasons</summary>{items}</details>'


def standalone_page(title: str, body: str) -> str:
    """A self-contained page (styles inline, nothing fetched) for the compare and matrix views."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<title>{escape(title)}</title><link rel="icon" href="data:,">'
        "<style>body{font-family:Helvetica,Arial,sans-serif;font-size:13px;margin:16px;color:#222}"
        f"h1{{font-size:20px}}h2{{font-size:15px;margin-top:18px}}{VERDICTS_CSS.read_text(encoding='utf-8')}</style>"
        f"</head><body><h1>{escape(title)}</h1>\n{body}\n</body></html>\n"
    )
