"""HTML fragments of results data: the verdict table, the sweep summary, a standalone page.

Pure functions from results.json records to strings; every value from a record is escaped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from html import escape
from pathlib import Path
from urllib.parse import quote

VERDICTS_CSS = Path(__file__).with_name("verdicts.css")
SWEEP_OUTCOMES = ("finding", "inconclusive", "clean", "unswept")
# What an upstream address's path says it is: a pull request is never labelled an issue.
UPSTREAM_KINDS = {"issues": "issue", "pull": "PR", "commit": "commit"}
# The page's legend: docs/reference/verdicts.md in short, in the order a reviewer meets them.
VERDICT_MEANINGS = (
    ("reproduced", "seen on a release inside the bug's affected range: known, expected (an xfail)"),
    ("fixed", "not seen on a release at or after the fix"),
    ("not-affected", "a release before the bug: not seen there, or the code it lives in not shipped yet"),
    ("regressed", "seen on a release outside the affected range: the run fails"),
    ("unplaced", "seen on a build nothing could place (its history unread, or none): the run fails; --history places it"),
    ("not-reproduced", "not seen on an affected release: fails for a deterministic bug (the registry is stale)"),
    ("inconclusive", "tests ran and none could decide (a meta-device limit, the simulated device refused): never a pass"),
    ("skipped", "nothing could run (no GPU for it), or the bug's package is not installed"),
    ("error", "a test of the bug errored, or the session stopped before its tests all ran: the run fails"),
)
EVIDENCE_MEANINGS = (  # strongest first: the strongest kind that decided wins
    ("direct", "the real symptom on the real device"),
    ("simulated", "the same test on the simulated CUDA device (simcuda:N), for a bug it can show"),
    ("proxy", "a root-cause check on CPU (e.g. on the meta device)"),
    ("control", "a test where the bug cannot show (cpu, or simcuda for a bug it cannot show): checks the oracle, decides nothing"),
)
# Results-table rows that a link can jump to: skipped tests have none (plugin_html lists them by reason).
OUTCOMES_WITHOUT_ROW = ("skipped",)


def link(url: str | None, text: str) -> str:
    """An external link that opens beside the report, or a dash when there is no address."""
    if not url:
        return '<span class="muted">&mdash;</span>'
    return f'<a href="{escape(url)}" target="_blank" rel="noopener">{escape(text)}</a>'


def counted(count: int, noun: str) -> str:
    """'1 finding', '7 findings'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def upstream_label(url: str, role: str = "") -> str:
    """'issue 8587' from .../issues/8587, 'fix PR 8929' from .../pull/8929 with role 'fix'."""
    *_, parent, last = ["", *url.rstrip("/").split("/")]
    kind = UPSTREAM_KINDS.get(parent, "")
    return " ".join(word for word in (role, kind, last[:7] if kind == "commit" else last) if word)


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


def verdict_legend() -> str:
    """What each verdict and evidence kind means, folded beside the table's heading (closed, it
    takes no line of its own: the table stays where the first screen shows it)."""
    verdicts = "".join(f"<dt>{verdict_badge(verdict)}</dt><dd>{escape(meaning)}</dd>" for verdict, meaning in VERDICT_MEANINGS)
    kinds = "".join(f"<dt>{evidence_label(kind)}</dt><dd>{escape(meaning)}</dd>" for kind, meaning in EVIDENCE_MEANINGS)
    return (
        '<details class="verdict-legend"><summary>Legend: verdicts and evidence</summary>'
        f'<div class="legend-body"><div><b>Verdicts</b><dl class="legend-verdicts">{verdicts}</dl></div>'
        f'<div><b>Evidence, strongest first</b><dl class="legend-evidence">{kinds}</dl></div>'
        '<p class="muted">A test that could not decide (inconclusive) stays a skip and is named in the detail. '
        "Open a row's detail for its tests; the full rules: docs/reference/verdicts.md.</p></div></details>"
    )


def _test_item(test: dict, deciding: Collection[str]) -> str:
    nodeid = test["nodeid"]
    name = escape(nodeid.rsplit("/", 1)[-1])
    shown = name if test["outcome"] in OUTCOMES_WITHOUT_ROW else f'<a href="#{escape(quote(nodeid, safe="/:"))}">{name}</a>'
    role = test["properties"].get("evidence")
    decided = ' <b class="decided">decided</b>' if nodeid in deciding else ""
    message = f' <span class="muted">{escape(test["message"])}</span>' if test["message"] else ""
    return (
        f'<li class="test-{escape(test["outcome"])}"><span class="test-outcome">{escape(test["outcome"])}</span> '
        f"{evidence_label(role) if role else ''}{decided} {shown}{message}</li>"
    )


def bug_tests(tests: Sequence[dict], deciding: Collection[str]) -> str:
    """A bug's tests (results.json records) with their outcomes, those that decided its verdict
    first; each one with a row in the results table links to it."""
    if not tests:
        return '<p class="bug-tests muted">No test of this bug ran.</p>'
    tally = ", ".join(f"{count} {outcome}" for outcome, count in sorted(Counter(t["outcome"] for t in tests).items()))
    decided = sum(test["nodeid"] in deciding for test in tests)
    ordered = sorted(tests, key=lambda test: (test["nodeid"] not in deciding, test["outcome"], test["nodeid"]))
    items = "".join(_test_item(test, deciding) for test in ordered)
    return f'<div class="bug-tests"><p>{counted(len(tests), "test")}: {tally}; {decided} decided the verdict.</p><ul>{items}</ul></div>'


def _errored_tests(record: dict) -> str:
    """For an `error` verdict, the tests that errored (record["tests"] holds exactly those)."""
    if record["verdict"] != "error" or not record["tests"]:
        return ""
    items = "".join(f"<li><code>{escape(nodeid)}</code></li>" for nodeid in record["tests"])
    return f'<ul class="errored-tests">{items}</ul>'


# A class per cell of a verdict row, so that each page can lay the columns out as it needs.
VERDICT_COLUMNS = tuple(f"cell-{name}" for name in ("bug", "verdict", "evidence", "installed", "affected", "fixed-in", "upstream", "detail"))


def verdict_row(record: dict, tests: Sequence[dict] = ()) -> str:
    """One bug's row. Its title (one line) and detail (two) open whole on a click, the detail
    with the bug's tests: `<details>`, so no script is needed."""
    installed = record["installed"] or "not installed"
    title = escape(record["title"])
    cells = [
        f'<code>{escape(record["bug_id"])}</code><details class="bug-title"><summary title="{title}">{title}</summary></details>',
        verdict_badge(record["verdict"]),
        evidence_label(record["evidence"]),
        f'{escape(record["package"])} {escape(installed)}',
        f'<code>{escape(record["affected_range"])}</code>{_affected_note(record)}',
        escape(record["first_fixed"] or "no release yet"),
        link(record["issue"], upstream_label(record["issue"]))
        + (f'<br>{link(record["fix"], upstream_label(record["fix"], "fix"))}' if record["fix"] else ""),
        f'<details class="detail"><summary><span class="detail-text">{escape(record["detail"])}</span></summary>'
        f'{bug_tests(tests, record["tests"])}</details>{_errored_tests(record)}',
    ]
    tds = "".join(f'<td class="{column}">{cell}</td>' for column, cell in zip(VERDICT_COLUMNS, cells))
    return f'<tr class="verdict-row verdict-{escape(record["verdict"])}" data-bug="{escape(record["bug_id"])}">{tds}</tr>'


def verdict_table(records: list[dict], tests: Sequence[dict] = ()) -> str:
    """One row per known bug: what this run concludes, and on which release; `tests` are the
    run's results.json test records, each listed under its bug."""
    if not records:
        return '<p class="muted">No known-bug verdicts in this run.</p>'
    header = "".join(
        f"<th>{name}</th>"
        for name in ("Bug", "Verdict", "Evidence", "Installed", "Affected range", "Fixed in", "Upstream", "Detail")
    )
    by_bug: dict[str, list[dict]] = {}
    for test in tests:
        by_bug.setdefault(test["properties"].get("known_bug"), []).append(test)
    rows = "".join(verdict_row(record, by_bug.get(record["bug_id"], [])) for record in records)
    return f'<table class="harness-table verdict-table"><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>'


def sweep_outcome(entry: dict) -> str:
    """finding, inconclusive, clean or unswept (fixtures/sweeps/plugin.py calls the field "result")."""
    return str(entry.get("result") or entry.get("outcome") or entry.get("kind") or "unknown")


def _sweep_row(entry: dict) -> str:
    outcome = sweep_outcome(entry)
    triage = entry.get("triaged")
    site = f'<div class="muted">at <code>{escape(str(entry["site"]))}</code></div>' if entry.get("site") else ""
    detail = escape(str(entry.get("detail", ""))) + site + (f'<div class="muted">triaged: {escape(str(triage))}</div>' if triage else "")
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
    """The tally, then new (untriaged) findings in full; triaged findings, inconclusive results and
    callables not swept folded away, since a long list of them would push everything else off the page."""
    entries = [entry for entry in sweeps if isinstance(entry, dict)] if isinstance(sweeps, list) else []
    if not entries:
        return '<p class="muted sweeps-none">No sweep results in this run.</p>'
    counts = {outcome: 0 for outcome in SWEEP_OUTCOMES}
    for entry in entries:
        counts[sweep_outcome(entry)] = counts.get(sweep_outcome(entry), 0) + 1
    shown = {outcome: count for outcome, count in counts.items() if count or outcome != "unswept"}  # unswept only where a sweep names some
    tally = ", ".join(counted(count, outcome) if outcome == "finding" else f"{count} {outcome}" for outcome, count in shown.items())
    findings = [entry for entry in entries if sweep_outcome(entry) == "finding"]
    groups = {
        "new": [entry for entry in findings if not entry.get("triaged")],
        "triaged": [entry for entry in findings if entry.get("triaged")],
        "inconclusive": [entry for entry in entries if sweep_outcome(entry) == "inconclusive"],
        "unswept": [entry for entry in entries if sweep_outcome(entry) == "unswept"],
    }
    parts = [f'<p class="sweeps-tally">{len(entries)} sweep results (callable x sweep x device x way): {escape(tally)}.</p>']
    if groups["new"]:
        parts.append(f'<p class="sweep-new">New findings ({len(groups["new"])}):</p>{_sweep_table(groups["new"])}')
    else:
        parts.append('<p class="sweep-new">No new finding.</p>')
    for key, title in (("triaged", "Triaged findings"), ("inconclusive", "Inconclusive"), ("unswept", "Not swept")):
        if groups[key]:
            parts.append(f'<details class="sweeps-{key}"><summary>{title} ({len(groups[key])})</summary>{_sweep_table(groups[key])}</details>')
    return "".join(parts)


def _skipped_item(nodeid: str) -> str:
    # A node id without "::" is a module skipped whole: pytest counts it as one skip, and so does the page.
    whole = "" if "::" in nodeid else ' <span class="muted">(the whole module)</span>'
    return f"<li><code>{escape(nodeid)}</code>{whole}</li>"


def skipped_tests_by_reason(groups: dict[str, list[str]]) -> str:
    """The skipped tests (and modules), one click away and grouped by reason (most first): on a CPU
    run hundreds of them (one per device the machine lacks) would otherwise come before what matters."""
    if not groups:
        return ""
    total = sum(len(nodeids) for nodeids in groups.values())
    reasons = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    items = "".join(
        f'<details class="skip-reason"><summary>{len(nodeids)} &times; {escape(reason)}</summary>'
        f'<ul>{"".join(_skipped_item(nodeid) for nodeid in nodeids)}</ul></details>'
        for reason, nodeids in reasons
    )
    return f'<details class="skipped-tests"><summary>{counted(total, "skipped test")}, {counted(len(groups), "reason")}</summary>{items}</details>'


def standalone_page(title: str, body: str) -> str:
    """A self-contained page (styles inline, nothing fetched) for the compare and matrix views."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<title>{escape(title)}</title><link rel="icon" href="data:,">'
        "<style>body{font-family:Helvetica,Arial,sans-serif;font-size:13px;margin:16px;color:#222}"
        f"h1{{font-size:20px}}h2{{font-size:15px;margin-top:18px}}{VERDICTS_CSS.read_text(encoding='utf-8')}</style>"
        f"</head><body><h1>{escape(title)}</h1>\n{body}\n</body></html>\n"
    )
