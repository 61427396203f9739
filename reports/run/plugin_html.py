"""pytest plugin: the harness's parts of the pytest-html report.

The page opens on what a reviewer must read first: the title (releases and GPU), the verdict
table (its legend folded beside its heading, each bug's tests one click away) and the sweep
summary, then the results, failures first, then observed bugs and findings (xfails), then passes
(pytest-html's initial sort by result); skipped tests (and modules skipped whole) leave the
results table for one folded list grouped by reason; the environment table comes last. The results table
gains columns from each report's user_properties (which pytest-xdist carries to the controller,
where the page is drawn); a test's images show side by side. Everything is filled in at the end of
the session, because reading the GPU's name initialises CUDA.
"""

from __future__ import annotations

import base64
import binascii
from html import escape
from pathlib import Path

import pytest
from pytest_html import extras as html_extras
from pytest_metadata.plugin import metadata_key

from reports.pages.html import VERDICTS_CSS, skipped_tests_by_reason, sweeps_summary, verdict_legend, verdict_table
from reports.run.environment import environment_rows, gpu_summary, release_summary
from reports.run.plugin_results import run_records, session_environment, session_sections, verdict_records
from reports.run.results import report_message

LAYOUT_CSS = Path(__file__).with_name("report_layout.css")
# (user_properties key, column heading), shown after the Test column.
EXTRA_COLUMNS = (
    ("known_bug", "Bug"),
    ("device", "Device"),
    ("size", "Size"),
    ("threads", "Threads"),
    ("evidence", "Evidence"),
    ("attempts", "Attempts"),
)
_FIRST_EXTRA_COLUMN = 2
_REPORT_DATA = pytest.StashKey[object]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("html"):
        return
    # Before pytest-html's own pytest_configure reads --css.
    config.option.css = [*config.option.css, str(VERDICTS_CSS), str(LAYOUT_CSS)]
    config.pluginmanager.register(ThumbnailStrip(), "harness-thumbnails")
    config.pluginmanager.register(SkippedByReason(), "harness-skipped-by-reason")


def report_title(environment: dict) -> str:
    return f"GPU regression harness: {release_summary(environment)} on {gpu_summary(environment)}"


def escaped_rows(rows: dict[str, str | dict[str, str]]) -> dict[str, str | dict[str, str]]:
    """pytest-html puts environment values into the page as HTML: escape them."""
    return {
        key: {escape(k): escape(v) for k, v in value.items()} if isinstance(value, dict) else escape(value)
        for key, value in rows.items()
    }


def pytest_html_report_title(report) -> None:
    # Kept to be filled in at the end of the session: the title needs the GPU's name.
    report.config.stash[_REPORT_DATA] = report


def pytest_html_results_summary(prefix: list, summary: list, postfix: list, session: pytest.Session) -> None:
    config = session.config
    environment = session_environment(config)
    report_data = config.stash.get(_REPORT_DATA, None)
    if report_data is not None:
        report_data.title = report_title(environment)
        rows = escaped_rows(environment_rows(environment))
        plugins = config.stash.get(metadata_key, {}).get("Plugins")
        if plugins:
            rows["pytest plugins"] = escaped_rows({"plugins": plugins})["plugins"]
        report_data.set_data("environment", rows)
    prefix += [
        f'<div class="verdicts-heading"><h2>Known-bug verdicts</h2>{verdict_legend()}</div>',
        verdict_table(verdict_records(config), run_records(config)),
        "<h2>Sweep findings</h2>",
        sweeps_summary(session_sections(config).get("sweeps")),
    ]


def pytest_html_results_table_header(cells: list) -> None:
    cells[_FIRST_EXTRA_COLUMN:_FIRST_EXTRA_COLUMN] = [
        f'<th class="sortable" data-column-type="{key}">{heading}</th>' for key, heading in EXTRA_COLUMNS
    ]


def pytest_html_results_table_row(report: pytest.TestReport | pytest.CollectReport, cells: list) -> None:
    # A collection error (a suite whose library fails to import) arrives as a CollectReport.
    properties = dict(getattr(report, "user_properties", ()))
    cells[_FIRST_EXTRA_COLUMN:_FIRST_EXTRA_COLUMN] = [
        f'<td class="col-{key}">{escape(str(properties.get(key, "")))}</td>' for key, _ in EXTRA_COLUMNS
    ]


def pytest_html_results_table_html(report: pytest.TestReport, data: list) -> None:
    """An expected failure (a reproduced bug, a new sweep finding) opens with its verdict in words,
    not with a traceback that says nothing of it. Skips draw no row (SkippedByReason)."""
    if hasattr(report, "wasxfail"):
        data.insert(0, f'<span class="outcome-reason">Expected failure: {escape(report_message(report))}</span>\n')


def is_base64(content: object) -> bool:
    try:
        base64.b64decode(str(content).encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return False
    return True


def thumbnail_strip(images: list[dict]) -> str:
    figures = "".join(
        f'<figure><img src="data:{escape(image["mime_type"])};base64,{image["content"]}" alt="{escape(image["name"])}">'
        f"<figcaption>{escape(image['name'])}</figcaption></figure>"
        for image in images
    )
    return f'<div class="thumbnails">{figures}</div>'


class ThumbnailStrip:
    """On the controller, before pytest-html reads the report: a test's embedded images become one
    row of captioned thumbnails (source, decoded, difference side by side)."""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        extras = getattr(report, "extras", [])
        images = [e for e in extras if e.get("format_type") == html_extras.FORMAT_IMAGE and is_base64(e.get("content"))]
        if images:
            others = [extra for extra in extras if extra not in images]
            report.extras = [html_extras.html(thumbnail_strip(images)), *others]


class SkippedByReason:
    """On the controller: each skipped test (not an xfail, which is an observed bug) leaves the
    results table (pytest-html draws no row for a test whose cells a hook emptied) and joins its
    reason's group, drawn folded under the summary."""

    def __init__(self) -> None:
        self.groups: dict[str, list[str]] = {}

    @pytest.hookimpl(trylast=True)  # after the columns are added: an emptied row stays empty
    def pytest_html_results_table_row(self, report: pytest.TestReport | pytest.CollectReport, cells: list) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self.groups.setdefault(report_message(report), []).append(report.nodeid)
            del cells[:]

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # A module skipped whole is one of pytest's skips too, though pytest-html draws no row for it.
        if report.skipped:
            self.groups.setdefault(report_message(report), []).append(report.nodeid)

    def pytest_html_results_summary(self, prefix: list, summary: list, postfix: list, session: pytest.Session) -> None:
        postfix.append(skipped_tests_by_reason(self.groups))
