"""What a test body hands the harness: observe() raises the finding with its text; a skip's
reason reads the same whichever shape pytest gave the report."""

from __future__ import annotations

import pytest

from fixtures.known_bugs.outcomes import (
    BugObserved,
    Inconclusive,
    collection_error,
    found_in,
    observe,
    other_error_in,
    sighting_in,
    skip_reason,
    workers_failure,
)


def test_observe_raises_the_finding_with_its_description() -> None:
    with pytest.raises(BugObserved) as raised:
        observe(True, "frame 2 differs")
    assert str(raised.value) == "frame 2 differs"


def test_observe_without_the_bug_returns() -> None:
    assert observe(False, "frame 2 differs") is None


def report(longrepr: object) -> pytest.TestReport:
    return pytest.TestReport("t.py::test", ("t.py", 1, "test"), {}, "skipped", longrepr, "setup")


@pytest.mark.parametrize(
    ("longrepr", "reason"),
    [
        (("t.py", 3, "Skipped: cuda:1 requested, 1 CUDA device visible"), "cuda:1 requested, 1 CUDA device visible"),
        (("t.py", 3, "no prefix: Skipped: kept"), "no prefix: Skipped: kept"),
        ("a reason as text", "a reason as text"),
        (None, ""),
    ],
    ids=["pytest's tuple", "tuple without prefix", "text", "none"],
)
def test_skip_reason_drops_only_pytests_prefix(longrepr: object, reason: str) -> None:
    assert skip_reason(report(longrepr)) == reason


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("Traceback:\n  from x import y\nE   ModuleNotFoundError: No module named 'x'", "ModuleNotFoundError: No module named 'x'"),
        ("ExceptionGroup: two errors", "ExceptionGroup: two errors"),  # no margin: its own leading E stays
        ("", "collection error"),
    ],
    ids=["pytest's margin", "an exception named E...", "nothing said"],
)
def test_a_collection_error_is_its_last_line_without_the_margin(text: str, line: str) -> None:
    failed = pytest.CollectReport("suites/x/test_y.py", "failed", text, [])
    assert collection_error(failed) == line


def test_a_finding_inside_an_exception_group_is_found_at_any_depth() -> None:
    finding = BugObserved("frame 3 corrupted")
    group = ExceptionGroup("flaky", [ValueError("other"), ExceptionGroup("inner", [finding])])
    assert found_in(group, BugObserved) is finding
    assert found_in(finding, BugObserved) is finding
    assert found_in(ExceptionGroup("flaky", [ValueError("other")]), BugObserved) is None
    assert found_in(ValueError("plain"), BugObserved) is None


def test_an_error_beside_the_oracles_findings_is_found_at_any_depth() -> None:
    error = RuntimeError("boom")
    assert other_error_in(ExceptionGroup("two", [BugObserved("seen"), ExceptionGroup("inner", [Inconclusive("meta"), error])])) is error
    assert other_error_in(ExceptionGroup("flaky", [BugObserved("seen"), Inconclusive("meta")])) is None
    assert other_error_in(BugObserved("seen")) is None and other_error_in(error) is error


SEEN_0, SEEN_1, BROKEN = BugObserved("thread 0: noise"), BugObserved("thread 1: noise"), TypeError("a broken call")


@pytest.mark.parametrize(
    ("errors", "raised"),
    [
        ([], None),
        ([SEEN_0, SEEN_1], "BugObserved: 2 of 4 threads saw it; first: thread 0: noise"),
        ([BROKEN], "TypeError: a broken call"),
        ([SEEN_0, BROKEN], "ExceptionGroup: 2 of 4 threads failed (2 sub-exceptions)"),  # no sighting hides an error
        ([BROKEN, BROKEN], "ExceptionGroup: 2 of 4 threads failed (2 sub-exceptions)"),
    ],
)
def test_what_a_tests_threads_raised_is_one_exception(errors: list[BaseException], raised: str | None) -> None:
    failure = workers_failure(errors, 4, "saw it")
    assert (None if failure is None else f"{type(failure).__name__}: {failure}") == raised
    if isinstance(failure, BugObserved):
        assert failure.__cause__ is SEEN_0


def test_a_sighting_reads_as_its_first_line_wherever_it_sits() -> None:
    assert sighting_in(ExceptionGroup("two", [ValueError("other"), BugObserved("frame 3 corrupted\ndetails")])) == "frame 3 corrupted"
    assert sighting_in(BugObserved()) == "observed" and sighting_in(ValueError("plain")) is None
