"""`pytest tests --release-range` runs the self-tests that install releases from the package index,
and only them (CI's release-range step); `pytest tests` skips each, naming that command
(tests/conftest.py)."""

from __future__ import annotations

import pytest

import tests.conftest
from tests.conftest import NOT_ASKED_FOR

TWO_TESTS = """
import pytest

@pytest.mark.release_range
def test_installs_a_release():
    pass

def test_plain():
    pass
"""


@pytest.fixture
def session(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(TWO_TESTS)
    return pytester


def test_without_the_option_a_release_range_test_is_skipped_naming_the_option(session: pytest.Pytester) -> None:
    result = session.runpytest("-p", "tests.conftest", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([f"SKIPPED*{NOT_ASKED_FOR}"])
    assert "pytest tests --release-range" in NOT_ASKED_FOR


def test_with_the_option_only_release_range_tests_run(session: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tests.conftest, "pypi_reachable", lambda: True)
    result = session.runpytest("-p", "tests.conftest", "--release-range", "-v")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*test_installs_a_release PASSED*"])


def test_with_the_option_and_no_package_index_they_skip_saying_so(session: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tests.conftest, "pypi_reachable", lambda: False)
    result = session.runpytest("-p", "tests.conftest", "--release-range", "-rs")
    result.assert_outcomes(skipped=1, deselected=1)
    result.stdout.fnmatch_lines(["SKIPPED*pypi.org:443 unreachable*"])
