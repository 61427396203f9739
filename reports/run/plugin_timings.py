"""pytest plugin: a run of the suites in one process (pytest-isolated's children included) reports
its time by phase, above the verdicts and in results.json's `timings`. An xdist run is left out:
its phases are its workers', which the controller does not see."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fixtures.devices.gpu_turns import SIMULATED_GROUP
from fixtures.devices.plugin import isolated_children_at_once
from fixtures.evidence.isolated_reports import in_isolated_child
from fixtures.known_bugs.plugin import runs_the_suites
from reports.run.timings import Timeline, phase_lines, phases, process_age

CLOCK = "harness-phase-clock"


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    distributed = getattr(config.option, "dist", "no") != "no" or hasattr(config, "workerinput")
    if not distributed and not in_isolated_child(os.environ) and runs_the_suites(config):
        config.pluginmanager.register(PhaseClock(), CLOCK)


def start_up() -> float | None:
    """Seconds from this process's start to now, where Linux's /proc tells; else None."""
    try:
        stat, uptime = Path("/proc/self/stat").read_text(), Path("/proc/uptime").read_text()
        return process_age(stat, uptime, os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class PhaseClock:
    def __init__(self) -> None:
        self.timeline = Timeline(start_up=start_up())
        self.isolated: set[str] = set()  # node ids pytest-isolated runs in its children
        self.simulated: set[str] = set()  # those of them in the simulated devices' child
        self.children_began: float | None = None
        self.first_in_process: float | None = None
        self.finishing: float | None = None

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session):
        begun = time.monotonic()
        try:
            return (yield)
        finally:
            self.timeline.collection = time.monotonic() - begun

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        markers = {item.nodeid: item.get_closest_marker("isolated") for item in session.items}
        # pytest-isolated's own reading: a group given by position or by name, else one child per test.
        group_of = {
            nodeid: marker.args[0] if marker.args else marker.kwargs.get("group", nodeid) for nodeid, marker in markers.items() if marker is not None
        }
        self.isolated = set(group_of)
        self.simulated = {nodeid for nodeid, group in group_of.items() if group == SIMULATED_GROUP}
        groups = set(group_of.values())
        self.timeline.children = len(groups)
        self.timeline.children_at_once = min(isolated_children_at_once(session.config), len(groups)) if groups else 1

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session):
        begun = self.children_began = time.monotonic()
        try:
            return (yield)
        finally:
            ended = time.monotonic()
            # pytest-isolated runs every child first, then the in-process tests.
            split = (self.first_in_process or ended) if self.isolated else begun
            self.timeline.children_wall = split - begun
            self.timeline.in_process_wall = ended - split

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> None:
        if self.first_in_process is None and item.nodeid not in self.isolated:
            self.first_in_process = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        simulated = report.nodeid in self.simulated
        self.timeline.add_report(report.nodeid, report.when, report.duration, report.nodeid in self.isolated, simulated)
        if report.nodeid in self.isolated and self.children_began is not None:  # reported once its child is reaped
            reaped = time.monotonic() - self.children_began
            if simulated:
                self.timeline.simulated_child_wall = reaped
            else:
                self.timeline.gpu_children_wall = reaped
        started = dict(report.user_properties).get("cuda_start_s") if report.when == "setup" else None
        if started is not None:  # fixtures/devices/plugin.py times it where a test starts CUDA
            self.timeline.cuda_start += float(started)
            self.timeline.cuda_starts += 1

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session):
        self.finishing = time.monotonic()
        return (yield)

    def pytest_harness_results(self, config: pytest.Config) -> dict:
        return {"timings": phases(self.timeline)}

    def pytest_terminal_summary(self, terminalreporter) -> None:
        reports = time.monotonic() - self.finishing if self.finishing is not None else None
        terminalreporter.section("time by phase")
        for line in phase_lines(phases(self.timeline, reports)):
            terminalreporter.line(line)
