"""tests/helpers/plugin_fault_matrix.py in sessions of its own: the matrix marks a failed fault test
missed and the run fails, prints nothing without fault tests, and prints once under pytest-xdist."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MATRIX_PLUGIN = "tests.helpers.plugin_fault_matrix"

FAULT_SESSION = """
import pytest

def oracle(value):
    assert value == 0, "the oracle flags it"

@pytest.mark.catches("o.py::oracle")
def test_fault_flagged():
    with pytest.raises(AssertionError):
        oracle(1)

@pytest.mark.catches("o.py::oracle", "o.py::other")
def test_fault_unflagged():
    with pytest.raises(AssertionError):
        oracle(0)

def test_unmarked():
    pass
"""


@pytest.fixture
def matrix_session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # for the plugin in subprocesses and xdist workers
    return pytester


def test_session_prints_caught_and_missed_and_fails(matrix_session: pytest.Pytester) -> None:
    matrix_session.makepyfile(FAULT_SESSION)
    result = matrix_session.runpytest("-p", MATRIX_PLUGIN, "--strict-markers")
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= fault x oracle matrix =*",
            "verdict  fault      oracle",
            "missed   unflagged  o.py::oracle",
            "                    o.py::other",
            "caught   flagged    o.py::oracle",
            "2 faults in 2 runs (parametrizations) against 2 oracles: 1 caught, 1 missed",
        ]
    )


def test_session_without_catches_tests_prints_no_matrix(matrix_session: pytest.Pytester) -> None:
    matrix_session.makepyfile(FAULT_SESSION)
    result = matrix_session.runpytest("-p", MATRIX_PLUGIN, "--strict-markers", "-k", "unmarked")
    result.assert_outcomes(passed=1)
    assert "fault x oracle matrix" not in result.stdout.str()


def test_session_under_xdist_prints_the_matrix_once(matrix_session: pytest.Pytester) -> None:
    matrix_session.makepyfile(FAULT_SESSION)
    result = matrix_session.runpytest_subprocess("-p", MATRIX_PLUGIN, "--strict-markers", "-n", "2")
    result.assert_outcomes(passed=2, failed=1)
    assert result.stdout.str().count("fault x oracle matrix") == 1
    result.stdout.fnmatch_lines(["missed   unflagged  o.py::oracle", "caught   flagged    o.py::oracle"])
