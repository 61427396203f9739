"""--race-budget: parsing, and that iteration stops on count or on time."""

from __future__ import annotations

import itertools

import pytest

from fixtures.determinism.race_budget import RaceBudget, RaceBudgetError, parse_race_budget


@pytest.mark.parametrize(
    ("text", "expected"),
    [("20", RaceBudget(20, None)), ("90s", RaceBudget(None, 90.0)), ("1000, 2.5s", RaceBudget(1000, 2.5))],
)
def test_parse(text: str, expected: RaceBudget) -> None:
    assert parse_race_budget(text) == expected


@pytest.mark.parametrize("text", ["", "0", "-3", "ten", "2.5", "3m", "0s"])
def test_malformed(text: str) -> None:
    with pytest.raises(RaceBudgetError, match="--race-budget"):
        parse_race_budget(text)


def test_count_bounds_iterations() -> None:
    assert list(RaceBudget(3, None).iterations()) == [0, 1, 2]


def test_time_bounds_iterations() -> None:
    ticks = itertools.count(0.0, 1.0)  # a fake clock: one second per reading
    assert list(RaceBudget(None, 3.0).iterations(clock=lambda: next(ticks))) == [0, 1, 2]


def test_at_least_one_iteration_however_small_the_time() -> None:
    ticks = itertools.count(0.0, 100.0)
    assert list(RaceBudget(None, 0.001).iterations(clock=lambda: next(ticks))) == [0]
