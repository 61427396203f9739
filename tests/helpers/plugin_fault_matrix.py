"""pytest plugin (loaded by tests/conftest.py): the `catches` marker and the fault x oracle matrix
in the terminal summary.

A fault-injection test carries `@pytest.mark.catches("path::function", ...)`. The refs travel on
its reports' user_properties, so results from pytest-xdist workers reach the controller, which
prints the matrix (tests/helpers/fault_matrix.py) once; a session with no such test prints nothing."""

from __future__ import annotations

import pytest

from tests.helpers.fault_matrix import CATCHES_PROPERTY, FaultRow, catches_refs, fault_name, function_of, render, verdict


class FaultMatrix:
    """The phase outcomes of every test whose reports name oracles; printed as the matrix."""

    def __init__(self) -> None:
        self.outcomes: dict[str, tuple[tuple[str, ...], list[str]]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        refs = catches_refs(report.user_properties)
        if refs:
            self.outcomes.setdefault(report.nodeid, (refs, []))[1].append(report.outcome)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        rows = [
            FaultRow(fault_name(nodeid), refs, verdict(outcomes), function_of(nodeid))
            for nodeid, (refs, outcomes) in self.outcomes.items()
        ]
        lines = render(rows)
        if lines:
            terminalreporter.write_sep("=", "fault x oracle matrix")
            for line in lines:
                terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "catches(*oracle_refs): a fault-injection test; the 'path::function' oracles its injected fault must trip",
    )
    if not hasattr(config, "workerinput"):  # a worker's reports reach the controller, which prints
        config.pluginmanager.register(FaultMatrix(), "fault_matrix")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    report.user_properties.extend(
        (CATCHES_PROPERTY, ref) for marker in item.iter_markers(CATCHES_PROPERTY) for ref in marker.args
    )
    return report
