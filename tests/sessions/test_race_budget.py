"""--race-budget: parsing, iteration stopping on count or on time, the attempts a race test makes
(from any thread) and the seconds they spend per phase, and the budget a session gives a race test by default and when told."""

from __future__ import annotations

import itertools
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fixtures.races.budget import RaceBudget, RaceBudgetError, RaceRun, parse_race_budget
from fixtures.races.phases import PhaseSeconds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20", RaceBudget(20, None)), ("90s", RaceBudget(None, 90.0)), ("1000, 2.5s", RaceBudget(1000, 2.5)),
        ("1", RaceBudget(1, None)), ("0.5s", RaceBudget(None, 0.5)),  # one attempt, half a second: the least there is
    ],
)  # fmt: skip
def test_parse(text: str, expected: RaceBudget) -> None:
    assert parse_race_budget(text) == expected


@pytest.mark.parametrize("text", ["", "0", "-3", "ten", "2.5", "3m", "0s"])
def test_malformed(text: str) -> None:
    with pytest.raises(RaceBudgetError, match="--race-budget"):
        parse_race_budget(text)


def test_an_empty_budget_says_what_to_give() -> None:
    with pytest.raises(RaceBudgetError, match=r"^--race-budget is empty; give a count \(20\), a time \(90s\) or both \(20,90s\)$"):
        parse_race_budget(" , ")


# The last of each kind won: "20,90" (the s left off) ran 90 iterations with no time limit.
@pytest.mark.parametrize(("text", "kind"), [("20,90", "count"), ("3,20s,5", "count"), ("5s,2s", "time")])
def test_a_count_or_a_time_given_twice_is_refused(text: str, kind: str) -> None:
    with pytest.raises(RaceBudgetError, match=f"gives a {kind} twice"):
        parse_race_budget(text)


def test_count_bounds_iterations() -> None:
    assert list(RaceBudget(3, None).iterations()) == [0, 1, 2]


def test_time_bounds_iterations() -> None:
    ticks = itertools.count(0.0, 1.0)  # a fake clock: one second per reading
    assert list(RaceBudget(None, 3.0).iterations(clock=lambda: next(ticks))) == [0, 1, 2]


def test_at_least_one_iteration_however_small_the_time() -> None:
    ticks = itertools.count(0.0, 100.0)
    assert list(RaceBudget(None, 0.001).iterations(clock=lambda: next(ticks))) == [0]


@pytest.mark.parametrize(
    ("budget", "text"),
    [
        (RaceBudget(162, 20.0), "162,20s"), (RaceBudget(None, 2.5), "2.5s"), (RaceBudget(20, None), "20"),
        # `:g` wrote "1.23457e+06s" and "1e-08s", which the option refuses, and "0.123457s".
        (RaceBudget(None, 1234567.0), "1234567s"), (RaceBudget(None, 1e-08), "0.00000001s"), (RaceBudget(None, 0.1234567), "0.1234567s"),
        (RaceBudget(None, 1e16), "10000000000000000s"),  # whole: no trailing zero is cut
    ],
)  # fmt: skip
def test_a_budget_reads_as_the_option_writes_it(budget: RaceBudget, text: str) -> None:
    assert str(budget) == text and parse_race_budget(text) == budget


def test_every_attempt_begun_is_counted_from_every_thread() -> None:
    run = RaceRun(RaceBudget(50, None))
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: sum(1 for _ in run.iterations()), range(8)))
    assert run.attempts == 8 * 50


def test_phase_seconds_add_up_per_phase_from_every_thread_a_raising_one_included() -> None:
    ticks = itertools.count()
    phases = PhaseSeconds(clock=lambda: next(ticks) * 0.25)  # every reading a quarter second on
    with phases.phase("make"):
        pass
    with phases.phase("check"):
        pass
    with pytest.raises(ValueError), phases.phase("make"):
        raise ValueError("a sighting")
    assert phases.seconds() == {"make": 0.5, "check": 0.25}
    per_thread = threading.local()

    def thread_clock() -> float:  # each thread's own readings, a quarter second apart
        per_thread.ticks = getattr(per_thread, "ticks", -1) + 1
        return per_thread.ticks * 0.25

    threaded = PhaseSeconds(clock=thread_clock)

    def attempt(_: int) -> None:
        with threaded.phase("encode"):
            pass

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two bytecodes: an unlocked sum loses updates
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(attempt, range(20_000)))
    finally:
        sys.setswitchinterval(switching)
    assert threaded.seconds() == {"encode": 5_000.0}  # 20,000 attempts of a quarter second, whichever thread ran them


def test_the_attempt_that_saw_the_bug_counts() -> None:
    run = RaceRun(RaceBudget(10, None))
    with pytest.raises(AssertionError):
        for index in run.iterations():
            assert index < 3
    assert run.attempts == 4


RACE_TEST = """
import pytest
from concurrent.futures import ThreadPoolExecutor


@pytest.mark.known_bug("torchvision-9606")
def test_hunt(device, race_budget):
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda _: [index for index in race_budget.iterations()], range(2)))
"""


@pytest.mark.parametrize(
    ("option", "budget", "attempts"), [([], "3,20s: the CPU control's budget", 6), (["--race-budget", "4"], "4: --race-budget", 8)]
)
def test_a_race_test_reports_its_budget_and_attempts(harness, tmp_path: Path, option: list[str], budget: str, attempts: int) -> None:
    harness.makepyfile(RACE_TEST)
    harness.runpytest("--device", "cpu", f"--report-dir={tmp_path}", *option).assert_outcomes(passed=1)
    (test,) = json.loads((tmp_path / "results.json").read_text())["tests"]
    assert test["properties"]["race_budget"].startswith(budget)
    assert test["properties"]["attempts"] == attempts  # two threads, each the whole count


RACE_REGISTRY = """
[fake-race]
title = "a fake race whose symptom shows on the CPU"
package = "pytest"
affected = ">=1"
issue = "https://example.invalid/issues/1"
kind = "race"
symptom_device = "cpu"
"""
CLEAN_HUNT = """
import pytest


@pytest.mark.known_bug("fake-race")
def test_hunt(device, race_budget):
    for index in race_budget.iterations():
        pass
"""


def test_a_clean_hunts_attempts_reach_its_verdict(harness, tmp_path: Path) -> None:
    """The attempts the fixture counted travel on the test's report to the verdict, which states
    them and its odds (no GPU model here: none the record could name)."""
    registry = tmp_path / "race.toml"
    registry.write_text(RACE_REGISTRY)
    harness.makepyfile(CLEAN_HUNT)
    result = harness.runpytest(f"--bug-registry={registry}", "--device", "cpu", f"--report-dir={tmp_path}", "--race-budget", "4")
    result.assert_outcomes(passed=1)
    (verdict,) = json.loads((tmp_path / "results.json").read_text())["verdicts"]
    assert (verdict["verdict"], verdict["miss"]["attempts"], verdict["miss"]["tests"], verdict["miss"]["chance"]) == ("not-reproduced", 4, 1, None)
    assert verdict["detail"].startswith("4 attempts, none saw it; no sighting recorded on a device the record cannot name")
