"""pytest plugin: where a run's reports go, and writing results.json.

A run of the suites writes report.html (pytest-html, self-contained), junit.xml and
results.json under reports/out/ unless told otherwise; a run of the self-tests writes nothing
unless asked (--report-dir), and neither does any session the self-tests start: they run with
$HARNESS_SELF_TEST set (tests/conftest.py), so the suites' reports of the last `pytest` stay.
Records are built from test reports on the controller, so a pytest-xdist run loses and
duplicates nothing.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest

from fixtures.devices.plugin import workers_seen
from fixtures.evidence.isolated_reports import in_isolated_child
from fixtures.known_bugs.plugin import VERDICTS, bug_status, registry_of, runs_the_suites
from reports.run.environment import environment_facts
from reports.run.results import collect_record, merge_test_record, results_document, verdict_record

DEFAULT_REPORT_DIR = "reports/out"
# Set for the self-tests and every session they start (in process, pytester subprocess or plain
# subprocess): the default report directory is then off, --report-dir still writes.
SELF_TEST_ENV = "HARNESS_SELF_TEST"
# Computed once per session, on the controller, and shared with the HTML report (plugin_html).
ENVIRONMENT = pytest.StashKey[dict]()
SECTIONS = pytest.StashKey[dict]()
RUN_RECORDS = "harness-run-records"  # the RunRecords plugin's name


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from reports.run import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness reports")
    group.addoption(
        "--report-dir",
        default=None,
        metavar="DIR",
        help=f"write report.html, junit.xml and results.json here (default for runs of suites/: {DEFAULT_REPORT_DIR})",
    )
    group.addoption("--no-reports", action="store_true", help="write no report files")


def report_dir(config: pytest.Config) -> Path | None:
    # pytest-isolated's child runs one test for its parent, with the parent's options: its reports
    # would overwrite the parent's, and outlive a crashed parent as if they were its.
    if config.getoption("no_reports") or in_isolated_child(os.environ):
        return None
    chosen = config.getoption("report_dir")
    if chosen == "":  # a template that left it out (--report-dir=$DIR): never the checkout's folder
        raise pytest.UsageError("--report-dir is empty; give a folder, or --no-reports")
    if chosen is not None:
        return Path(chosen)
    if os.environ.get(SELF_TEST_ENV):
        return None
    return config.rootpath / DEFAULT_REPORT_DIR if runs_the_suites(config) else None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # the controller writes every report
        return
    config.pluginmanager.register(RunRecords(), RUN_RECORDS)  # report.html reads them too, results.json or not
    directory = report_dir(config)
    if directory is None:
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a one-line usage error, not an INTERNALERROR traceback
        raise pytest.UsageError(f"--report-dir {directory}: cannot create it: {error.strerror}") from None
    # Before pytest-html's and junitxml's own pytest_configure read these options.
    if not config.option.htmlpath:
        config.option.htmlpath = str(directory / "report.html")
        config.option.self_contained_html = True
    if not config.option.xmlpath:
        config.option.xmlpath = str(directory / "junit.xml")
    written = (Path(config.option.htmlpath), Path(config.option.xmlpath), directory / "results.json")
    if blocked := [str(path) for path in written if path.is_dir()]:  # found now, not as a traceback at the session's end
        raise pytest.UsageError(f"--report-dir {directory}: {', '.join(blocked)} is a folder, where a report file goes")
    config.pluginmanager.register(ResultsWriter(config, directory / "results.json"), "harness-results")


def session_environment(config: pytest.Config) -> dict:
    """The run's environment facts, read once at the end of the session (they initialise CUDA)."""
    if ENVIRONMENT not in config.stash:
        config.stash[ENVIRONMENT] = environment_facts(workers_seen(config))
    return config.stash[ENVIRONMENT]


def session_sections(config: pytest.Config) -> dict:
    """The sections other plugins contribute through pytest_harness_results, asked once."""
    if SECTIONS not in config.stash:
        sections: dict = {}
        for contribution in config.hook.pytest_harness_results(config=config):
            sections.update(contribution or {})
        config.stash[SECTIONS] = sections
    return config.stash[SECTIONS]


def verdict_records(config: pytest.Config) -> list[dict]:
    """One results.json verdict record per bug; empty before the verdicts are drawn."""
    registry = registry_of(config)
    return [
        verdict_record(registry[v.bug_id], bug_status(config, registry[v.bug_id]), v)
        for v in config.stash.get(VERDICTS, [])
    ]


class RunRecords:
    """Each test's results.json record as the controller sees it (pytest-xdist's workers report
    there), and a module's skip reason or collection error beside them: for results.json and for
    report.html's verdict table alike."""

    def __init__(self) -> None:
        self.tests: dict[str, dict] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.tests[report.nodeid] = merge_test_record(self.tests.get(report.nodeid), report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if not report.passed:  # a whole module's skip reason or collection error, beside the tests
            self.tests[report.nodeid] = collect_record(report)


def run_records(config: pytest.Config) -> list[dict]:
    """The session's test (and failed or skipped module) records so far (RunRecords)."""
    return list(config.pluginmanager.get_plugin(RUN_RECORDS).tests.values())


class ResultsWriter:
    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config = config
        self.path = path
        self.started = _now()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = self.config
        document = results_document(
            started=self.started,
            finished=_now(),
            exit_status=int(session.exitstatus),  # the verdicts may have failed the run
            environment=session_environment(config),
            verdicts=verdict_records(config),
            tests=run_records(config),
            sections=session_sections(config),
        )
        self.path.write_text(json.dumps(document, indent=1, default=str), encoding="utf-8")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        terminalreporter.write_sep("-", f"results: {self.path}")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
