"""One grid from many CI jobs' results: a row per bug, a column per environment (release x GPU
model), each cell the verdict, linking to the report of the job that drew it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from html import escape
from pathlib import Path

from reports.pages.html import standalone_page, verdict_badge
from reports.run.environment import gpu_summary, release_sort_key, releases


@dataclass(frozen=True)
class Column:
    """One CI job: the environment it ran in, where its report is, and its verdicts by bug."""

    releases: tuple[str, ...]
    gpu: str
    job: str
    report_href: str
    verdicts: dict[str, dict]


def report_href(results_path: Path, document: dict, output: Path) -> str:
    """The job's own report: its HARNESS_REPORT_URL when CI set one, else the report.html that
    lies next to its results.json, relative to the matrix page (artifacts keep working offline)."""
    url = document["environment"].get("ci", {}).get("HARNESS_REPORT_URL")
    if url:
        return url
    report = results_path.parent.resolve() / "report.html"
    return Path(os.path.relpath(report, output.parent.resolve())).as_posix()


def job_name(results_path: Path, document: dict) -> str:
    ci = document["environment"].get("ci", {})
    return ci.get("HARNESS_JOB_NAME") or ci.get("GITHUB_JOB") or results_path.parent.name


def matrix_columns(documents: list[tuple[Path, dict]], output: Path) -> list[Column]:
    columns = [
        Column(
            releases=tuple(releases(document["environment"])),
            gpu=gpu_summary(document["environment"]),
            job=job_name(path, document),
            report_href=report_href(path, document, output),
            verdicts={record["bug_id"]: record for record in document["verdicts"]},
        )
        for path, document in documents
    ]
    return sorted(columns, key=lambda column: (release_sort_key(column.releases), column.gpu, column.job))


def bug_rows(columns: list[Column]) -> dict[str, str]:
    """Every bug any job judged, with its title, in order of first appearance."""
    rows: dict[str, str] = {}
    for column in columns:
        for bug_id, record in column.verdicts.items():
            rows.setdefault(bug_id, record.get("title", ""))
    return rows


def matrix_cell(column: Column, bug_id: str) -> str:
    record = column.verdicts.get(bug_id)
    if record is None:
        return '<td class="verdict-none" title="not in this run">&mdash;</td>'
    installed = f"{record['package']} {record['installed'] or '(not installed)'}"
    evidence = record["evidence"] or "no evidence"
    return (
        f'<td class="cell verdict-{escape(record["verdict"])}" data-bug="{escape(bug_id)}" title="{escape(record["detail"])}">'
        f'{verdict_badge(record["verdict"], href=column.report_href)}'
        f'<div class="muted">{escape(evidence)} · {escape(installed)}</div></td>'
    )


def matrix_html(columns: list[Column]) -> str:
    header = "".join(
        f'<th>{"".join(f"<div>{escape(release)}</div>" for release in column.releases)}'
        f'<div class="gpu">{escape(column.gpu)}</div>'
        f'<div class="muted"><a href="{escape(column.report_href)}">{escape(column.job)}</a></div></th>'
        for column in columns
    )
    rows = "".join(
        f'<tr data-bug="{escape(bug_id)}"><th><code>{escape(bug_id)}</code><div class="bug-title">{escape(title)}</div></th>'
        + "".join(matrix_cell(column, bug_id) for column in columns)
        + "</tr>"
        for bug_id, title in bug_rows(columns).items()
    )
    table = (
        f'<table class="harness-table matrix"><thead><tr><th>Bug</th>{header}</tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )
    note = f'<p class="muted">{len(columns)} job(s). A verdict links to the report of the job that drew it.</p>'
    return standalone_page("Known-bug verdicts by release and GPU", note + table)
