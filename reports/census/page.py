"""census.json, census.html, census.md and the console's summary of `python -m reports census`:
pure builders. Each is drawn from the document alone, so it can be redrawn from a kept census.json."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import asdict
from html import escape

from reports.census.findings import SWEEP, Finding
from reports.pages.html import counted, link, standalone_page, upstream_label

CENSUS_SCHEMA_VERSION = 1
# What a finding's match says, in the table's words.
MATCH_WORDS = {
    "bug": "registered bug",
    "upstream": "reported upstream",
    "not_found": "not found upstream",
    "not_a_bug": "not a device bug",
    "triaged": "triaged in the sweep allow-list",
    "wider": "triaged in the sweep allow-list for more releases than it shows in",
    "unmatched": "unmatched: not looked for upstream yet",
}


def reproducer(finding: Finding, package: str, refs: dict[str, str], pytest_args: list[str], sweeps: list[str]) -> str:
    """The smallest command that showed it, at its newest release: one test of the package's own
    suite (run in its tests at that ref), or the harness's sweeps (suites.toml's) of the callable."""
    release = finding.last
    if finding.kind == SWEEP:
        name = finding.where.partition(": ")[2].rsplit(".", 1)[-1]
        return f"{package}=={release}: {shlex.join(['pytest', *sweeps, '-k', name])}"
    return f"{package}=={release}, its tests at {refs[release]}: {shlex.join(['pytest', '--simcuda', *pytest_args, finding.tests[release][0]])}"


def census_document(
    package: str, repository: str, date: str, runs: list[dict], findings: list[Finding], stopped: str | None,
    pytest_args: Sequence[str] = (), sweeps: Sequence[str] = (),
) -> dict:
    refs = {run["release"]: run["tests_from"] for run in runs}
    return {
        "census_schema_version": CENSUS_SCHEMA_VERSION,
        "package": package,
        "repository": repository,
        "date": date,
        "releases": runs,
        "findings": [
            {
                **asdict(finding), "first": finding.first, "last": finding.last,
                "reproducer": reproducer(finding, package, refs, list(pytest_args), list(sweeps)),
            }
            for finding in findings
        ],
        "stopped": stopped,
    }


def match_text(match: dict) -> str:
    words = MATCH_WORDS[match["kind"]]
    return f"{words}: {match['value']}" if match["value"] else words


def error_text(finding: dict) -> str:
    """What it found, and for a sweep finding with a site, where: "device-error (module moved) at kornia/enhance/jpeg.py:_quantize"."""
    return f"{finding['error']} at {finding['site']}" if finding.get("site") else finding["error"]


def console_lines(document: dict) -> list[str]:
    findings = document["findings"]
    lines = [f"census of {document['package']} {releases_span(document)}: {counted(len(findings), 'finding')}"]
    for finding in findings:
        lines.append(f"  [{finding['kind']}] {finding['where']}: {error_text(finding)}")
        lines.append(f"    releases {', '.join(finding['releases'])}; {match_text(finding['match'])} ({finding['match']['how']})")
        lines.append(f"    reproducer: {finding['reproducer']}")
    if document["stopped"]:
        lines.append(f"census stopped: {document['stopped']}")
    return lines


def releases_span(document: dict) -> str:
    releases = [run["release"] for run in document["releases"]]
    return f"{releases[0]} to {releases[-1]} ({counted(len(releases), 'release')})" if releases else "(no release done)"


def _match_cell(match: dict) -> str:
    if match["kind"] == "upstream":
        return f"reported upstream: {link(match['value'], upstream_label(match['value']))}"
    return escape(match_text(match))


def census_html(document: dict) -> str:
    every = [run["release"] for run in document["releases"]]
    header = "".join(f"<th>{escape(release)}</th>" for release in every)
    rows = "".join(
        f"<tr><td>{escape(finding['kind'])}</td><td><code>{escape(finding['where'])}</code><br>{escape(error_text(finding))}</td>"
        + "".join(f"<td>{'&#9679;' if release in finding['releases'] else ''}</td>" for release in every)
        + f"<td>{_match_cell(finding['match'])}<br><span class=\"muted\">{escape(finding['match']['how'])}</span></td>"
        f"<td><code>{escape(finding['reproducer'])}</code></td></tr>"
        for finding in document["findings"]
    )
    counts = "".join(
        f"<tr><td>{escape(run['release'])}</td><td>{escape(run['tests_from'])}</td>"
        + "".join(f"<td>{run['counts'][key]}</td>" for key in COUNT_COLUMNS)
        + f"<td>{run['install_s'] + run['plain_s'] + run['simulated_s'] + run['sweeps_s']:.0f}</td></tr>"
        for run in document["releases"]
    )
    stopped = f'<p><span class="verdict verdict-regressed">census stopped</span> {escape(document["stopped"])}</p>' if document["stopped"] else ""
    body = (
        f"{stopped}<p>{escape(document['date'])}; tests from <code>{escape(document['repository'])}</code>; "
        f"{escape(releases_span(document))}.</p><h2>Findings</h2>"
        f'<table class="harness-table"><tr><th>kind</th><th>cause</th>{header}<th>upstream</th><th>reproducer</th></tr>{rows}</table>'
        f'<h2>Releases</h2><table class="harness-table"><tr><th>release</th><th>tests from</th>'
        + "".join(f"<th>{escape(key.replace('_', ' '))}</th>" for key in COUNT_COLUMNS)
        + f"<th>seconds</th></tr>{counts}</table>"
    )
    return standalone_page(f"Census: {document['package']}", body)


COUNT_COLUMNS = (
    "passing_plainly", "failing_only_simulated", "refused", "cuda_cases_passed", "cuda_cases_failing", "plain_failures", "sweep_findings",
)


def census_markdown(document: dict) -> str:
    lines = [
        f"# Census of {document['package']}: {releases_span(document)}",
        "",
        f"{document['date']}; each release's own tests from `{document['repository']}` (the ref in the releases table). "
        "Written by `python -m reports census`; do not edit.",
        "",
        "## Findings",
        "",
        "| kind | cause | releases | upstream | reproducer |",
        "| --- | --- | --- | --- | --- |",
    ]
    for finding in document["findings"]:
        seen = ", ".join(finding["releases"])
        releases = finding["first"] if finding["first"] == finding["last"] else f"{finding['first']} to {finding['last']} ({seen})"
        lines.append(
            f"| {finding['kind']} | `{finding['where']}`: {cell(error_text(finding))} | {releases} | {cell(match_text(finding['match']))} "
            f"({cell(finding['match']['how'])}) | `{cell(finding['reproducer'])}` |"
        )
    lines += ["", "## Releases", "", "| release | tests from | " + " | ".join(key.replace("_", " ") for key in COUNT_COLUMNS) + " | seconds |"]
    lines.append("| --- " * (len(COUNT_COLUMNS) + 3) + "|")
    for run in document["releases"]:
        seconds = run["install_s"] + run["plain_s"] + run["simulated_s"] + run["sweeps_s"]
        counts = " | ".join(str(run["counts"][key]) for key in COUNT_COLUMNS)
        lines.append(f"| {run['release']} | {run['tests_from']} | {counts} | {seconds:.0f} |")
    if document["stopped"]:
        lines += ["", f"Stopped: {document['stopped']}"]
    return "\n".join(lines) + "\n"


def cell(text: str) -> str:
    return text.replace("|", "\\|")
