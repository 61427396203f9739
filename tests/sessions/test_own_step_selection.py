"""The self-tests CI runs as steps of their own (tests/conftest.py's OWN_STEPS): `pytest tests
--release-range` runs those that install releases from the package index, `pytest tests
--runner-day` the simulated GPU runner's day, each those and only them; `pytest tests` skips
each, naming its command."""

from __future__ import annotations

import pytest

import tests.conftest
from tests.conftest import NOT_ASKED_FOR, RELEASE_RANGE, RUNNER_DAY

THREE_TESTS = """
import pytest

@pytest.mark.release_range
def test_installs_a_release():
    pass

@pytest.mark.runner_day
def test_a_runners_day():
    pass

def test_plain():
    pass
"""


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setattr(tests.conftest, "pypi_reachable", lambda: True)
    pytester.makepyfile(THREE_TESTS)
    return pytester


def test_without_an_option_each_own_step_test_is_skipped_naming_its_command(session: pytest.Pytester) -> None:
    result = session.runpytest("-p", "tests.conftest", "-rs")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines([f"SKIPPED*{RELEASE_RANGE.not_asked_for}", f"SKIPPED*{RUNNER_DAY.not_asked_for}"], consecutive=False)
    assert "pytest tests --release-range" in NOT_ASKED_FOR and "pytest tests --runner-day" in RUNNER_DAY.not_asked_for


@pytest.mark.parametrize(
    ("options", "ran"),
    [
        (["--release-range"], ["test_installs_a_release"]),
        (["--runner-day"], ["test_a_runners_day"]),
        (["--release-range", "--runner-day"], ["test_installs_a_release", "test_a_runners_day"]),
    ],
)
def test_with_options_only_their_tests_run(session: pytest.Pytester, options: list[str], ran: list[str]) -> None:
    result = session.runpytest("-p", "tests.conftest", *options, "-v")
    result.assert_outcomes(passed=len(ran), deselected=3 - len(ran))
    assert [line.split("::")[1].split()[0] for line in result.stdout.lines if " PASSED" in line] == ran


def test_with_the_option_and_no_package_index_they_skip_saying_so(session: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tests.conftest, "pypi_reachable", lambda: False)
    result = session.runpytest("-p", "tests.conftest", "--release-range", "--runner-day", "-rs")
    result.assert_outcomes(passed=1, skipped=1, deselected=1)
    result.stdout.fnmatch_lines(["SKIPPED*pypi.org:443 unreachable*"])
