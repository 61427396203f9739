"""The odds of a race hunt: the rate bounds and miss chances (against closed forms and published
Clopper-Pearson values), the budget a GPU test gets from the record, and what a clean hunt's
verdict says."""

from __future__ import annotations

import math

import pytest

from fixtures.races.budget import RaceBudget
from fixtures.races.choice import CPU_BUDGET, SIZED_SECONDS, UNRECORDED_SECONDS, Choice, cpu_choice, gpu_choice
from fixtures.races.miss import Hunt, miss_odds
from fixtures.races.odds import attempts_for, binomial_tail, miss_chance, percent_down, percent_up, rate_at_least, rate_at_most
from fixtures.races.record import Tally


@pytest.mark.parametrize(
    ("sightings", "attempts", "low", "high"),
    [
        (5, 10, 0.2224, 0.7776),  # the 90% two-sided Clopper-Pearson interval of 5/10 (its one-sided 95% ends)
        (0, 10, 0.0, 0.2589),
        (10, 10, 0.7411, 1.0),
    ],
)
def test_rate_bounds_match_published_clopper_pearson_values(sightings: int, attempts: int, low: float, high: float) -> None:
    assert rate_at_least(sightings, attempts) == pytest.approx(low, abs=5e-5)
    assert rate_at_most(sightings, attempts) == pytest.approx(high, abs=5e-5)


@pytest.mark.parametrize(("sightings", "attempts"), [(2, 13), (1, 5), (7, 40), (40, 200)])
def test_rate_bounds_are_the_beta_quantiles(sightings: int, attempts: int) -> None:
    """Clopper-Pearson's other form, through the regularized incomplete beta function (mpmath, which
    torch's sympy brings): the lower bound is the 5% quantile of Beta(s, n - s + 1), the upper the
    95% quantile of Beta(s + 1, n - s). 2 in 13 is torchvision-9606 on the H200, as the record holds it."""
    mpmath = pytest.importorskip("mpmath", reason="mpmath (a dependency of torch's sympy) is not installed")
    low, high = rate_at_least(sightings, attempts), rate_at_most(sightings, attempts)
    assert float(mpmath.betainc(sightings, attempts - sightings + 1, 0, low, regularized=True)) == pytest.approx(0.05, abs=1e-9)
    assert float(mpmath.betainc(sightings + 1, attempts - sightings, 0, high, regularized=True)) == pytest.approx(0.95, abs=1e-9)


@pytest.mark.parametrize("attempts", [1, 3, 13, 200, 2000])
def test_rate_bounds_match_their_closed_forms(attempts: int) -> None:
    """One sighting: 1 - 0.95 ** (1/n); all sightings: 0.05 ** (1/n); none: 1 - 0.05 ** (1/n)."""
    assert rate_at_least(1, attempts) == pytest.approx(1 - 0.95 ** (1 / attempts), rel=1e-9)
    assert rate_at_least(attempts, attempts) == pytest.approx(0.05 ** (1 / attempts), rel=1e-9)
    assert rate_at_most(0, attempts) == pytest.approx(1 - 0.05 ** (1 / attempts), rel=1e-9)


def test_the_bounds_are_where_the_tail_crosses_five_percent() -> None:
    assert binomial_tail(2, 13, rate_at_least(2, 13)) == pytest.approx(0.05, abs=1e-12)
    assert 1 - binomial_tail(1, 13, rate_at_most(0, 13)) == pytest.approx(0.05, abs=1e-12)
    assert binomial_tail(0, 13, 0.3) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("sightings", "attempts", "rate", "tail"),
    [(0, 5, 0.0, 1.0), (1, 5, 0.0, 0.0), (4, 5, 0.0, 0.0), (1, 5, 1.0, 1.0), (5, 5, 1.0, 1.0)],
)
def test_a_rate_of_none_or_every_attempt_is_exact(sightings: int, attempts: int, rate: float, tail: float) -> None:
    """At the rates 0 and 1 the logarithms are undefined: every count is certain or impossible."""
    assert binomial_tail(sightings, attempts, rate) == tail


def test_a_tiny_rate_steps_with_logarithms_and_others_with_powers() -> None:
    """Powers stay exact for a short binary fraction; the logarithms keep a tiny rate's digits."""
    assert miss_chance(1e-6, 10**6) == (1 - 1e-6) ** 10**6
    assert miss_chance(9.99e-7, 10**6) == math.exp(10**6 * math.log1p(-9.99e-7))


@pytest.mark.parametrize(
    ("rate", "miss", "count"),
    [
        (0.5, 0.01, 7), (0.1, 0.01, 44), (0.0281, 0.01, 162), (0.5, 0.5, 1), (1.0, 0.01, 1), (0.995, 0.01, 1),
        # Where the logarithms round the wrong way: 0.75 ** 3 is 0.421875 exactly (they say 4); one
        # attempt's own miss (they say 2); just under 0.5 ** 4 (they say 4).
        (0.25, 0.421875, 3), (0.001, 0.999, 1), (0.5, 0.06249999999999999, 5),
        # 1 - rate keeps few of a tiny rate's digits (none of 1e-17's): the count still ends (it
        # looped for ever), and agrees with the logarithms.
        (1e-17, 0.01, 460517018598809121), (2e-16, 0.01, 23025850929940454), (1e-13, 0.01, 46051701859879),
    ],
)  # fmt: skip
def test_attempts_for_is_the_fewest_whose_miss_is_within(rate: float, miss: float, count: int) -> None:
    assert attempts_for(rate, miss) == count
    assert miss_chance(rate, count) <= miss
    assert count == 1 or miss_chance(rate, count - 1) > miss


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rate_at_least(3, 2), "3 sightings in 2 attempts"),
        (lambda: rate_at_most(0, 0), "0 sightings in 0 attempts"),
        (lambda: attempts_for(0.0, 0.01), "rate 0.0"),
        (lambda: miss_chance(1.5, 3), "rate 1.5"),
        (lambda: miss_chance(0.5, -1), "attempts -1"),
        (lambda: miss_chance(-0.1, 3), "rate -0.1"),
        (lambda: rate_at_least(-1, 5), "-1 sightings in 5 attempts"),
        (lambda: attempts_for(1.0000001, 0.01), "rate 1.0000001"),
        (lambda: attempts_for(0.5, 0.0), "miss 0.0"),
        (lambda: attempts_for(0.5, 1.0), "miss 1.0"),
        (lambda: attempts_for(0.5, 1.5), "miss 1.5"),
    ],
)
def test_impossible_counts_are_named(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_no_rate_or_no_attempt_misses_for_certain() -> None:
    assert miss_chance(0.0, 5) == miss_chance(0.3, 0) == 1.0
    assert miss_chance(1.0, 1) == 0.0


H200 = Tally(gpu="NVIDIA H200", attempts=13, sightings=2, first_sighting=5)
A100_CLEAN = Tally(gpu="NVIDIA A100", attempts=300, sightings=0, first_sighting=None)
H100 = Tally(gpu="NVIDIA H100", attempts=200, sightings=199, first_sighting=1)


@pytest.mark.parametrize(
    ("gpu", "here", "elsewhere", "budget", "basis"),
    [
        ("NVIDIA H200", H200, [H200], RaceBudget(162, SIZED_SECONDS), "162 are sized for a 1% miss at the rate NVIDIA H200 showed (2 in 13"),
        # This model never saw it (clean attempts only): the lowest-rate model that did sizes the count.
        ("NVIDIA A100", A100_CLEAN, [A100_CLEAN, H200, H100], RaceBudget(162, SIZED_SECONDS), "no sighting recorded on NVIDIA A100"),
        ("an unknown GPU", None, [H100], RaceBudget(2, SIZED_SECONDS), "the rate NVIDIA H100 showed (199 in 200 attempts: at least 97%"),
        ("NVIDIA H200", None, [], RaceBudget(7, UNRECORDED_SECONDS), "no GPU has shown it: 7 attempts or 5 s, whichever"),
    ],
)
def test_the_gpu_budget_is_sized_from_the_record(gpu, here, elsewhere, budget: RaceBudget, basis: str) -> None:
    choice = gpu_choice(gpu, here, elsewhere)
    assert choice.budget == budget
    assert basis in choice.basis


def test_this_models_own_rate_sizes_the_count_even_where_another_models_is_lower() -> None:
    """The lowest rate elsewhere sizes only a model that never saw the bug itself."""
    rare_on_l4 = Tally(gpu="NVIDIA L4", attempts=500, sightings=1, first_sighting=300)
    assert gpu_choice("NVIDIA H200", H200, [H200, rare_on_l4]) == Choice(
        RaceBudget(162, SIZED_SECONDS),
        "162 attempts or 20 s, whichever ends first; "
        "162 are sized for a 1% miss at the rate NVIDIA H200 showed (2 in 13 attempts: at least 2.8%, 95% confidence)",
    )
    assert gpu_choice("NVIDIA A100", None, [H200, rare_on_l4]).budget.max_iterations == attempts_for(rate_at_least(1, 500), 0.01)


def test_an_unrecorded_race_gets_the_count_that_catches_a_frequent_one() -> None:
    """The time can end a hunt first (a slow attempt): the words say so, and a clean verdict states its chance for the attempts that ran."""
    assert gpu_choice("NVIDIA H200", None, []).basis == (
        "no GPU has shown it: 7 attempts or 5 s, whichever ends first; 7 catch a race firing on 50% of them with 99% chance"
    )


@pytest.mark.parametrize(
    ("here", "loops", "per_loop", "words"),
    [
        (H200, 8, 21, "162 attempts (21 per thread of 8) or 20 s"),
        (H200, 2, 81, "162 attempts (81 per thread of 2) or 20 s"),
        (None, 4, 2, "7 attempts (2 per thread of 4) or 5 s"),
    ],
)
def test_a_threaded_tests_attempts_are_shared_among_its_threads(here: Tally | None, loops: int, per_loop: int, words: str) -> None:
    """Every thread loops the budget and every attempt of each counts: the count is the threads' together."""
    choice = gpu_choice("NVIDIA H200", here, [here] if here else [], loops=loops)
    assert choice.budget.max_iterations == per_loop and per_loop * loops >= (162 if here else 7)
    assert words in choice.basis


def test_a_budget_never_stops_before_a_recorded_first_sighting() -> None:
    late = Tally(gpu="G", attempts=40, sightings=30, first_sighting=25)  # frequent, but the first came late
    assert attempts_for(rate_at_least(30, 40), 0.01) < 25
    assert gpu_choice("G", late, [late]).budget.max_iterations == 25


def test_the_cpu_keeps_its_small_budget() -> None:
    assert cpu_choice().budget == CPU_BUDGET == RaceBudget(3, 20.0)


CASE = "suites/x/test_x.py::test_race"


def test_a_clean_hunt_on_a_recorded_gpu_states_its_miss_chance() -> None:
    odds = miss_odds([Hunt(CASE, "NVIDIA H200", 3)], lambda case, gpu: H200 if (case, gpu) == (CASE, "NVIDIA H200") else None)
    assert odds.chance == pytest.approx((1 - rate_at_least(2, 13)) ** 3)
    assert odds.words() == (
        "3 attempts, none saw it; if it fires as often as recorded (NVIDIA H200: 2 in 13, at least 2.8%: at 95% confidence), "
        "a miss had a chance of at most 92%"
    )


def test_a_clean_hunt_long_enough_for_the_target_states_one_percent_or_less() -> None:
    odds = miss_odds([Hunt(CASE, "NVIDIA H200", 162)], lambda case, gpu: H200)
    assert odds.chance <= 0.01 and odds.words().endswith("a miss had a chance of at most 1.0%")


def test_without_a_recorded_rate_the_miss_is_unbounded_and_says_what_the_attempts_rule_out() -> None:
    odds = miss_odds([Hunt(CASE, "NVIDIA H200", 3), Hunt(CASE + "[b]", "NVIDIA H200", 24)], lambda case, gpu: None)
    assert odds.chance is None and odds.attempts == 27 and odds.tests == 2
    assert odds.open_rate == pytest.approx(rate_at_most(0, 3))  # the shortest hunt is the weakest
    assert odds.words() == (
        "27 attempts in 2 tests, none saw it; no sighting recorded on NVIDIA H200: the chance of a miss cannot be bounded; "
        "each test leaves a rate up to 64% per attempt open (95% confidence)"
    )


@pytest.mark.parametrize(
    ("hunts", "words"),
    [
        (
            [Hunt(CASE, "NVIDIA L4", 3)],
            "3 attempts, none saw it; no sighting recorded on NVIDIA L4: the chance of a miss cannot be bounded; "
            "it leaves a rate up to 64% per attempt open (95% confidence)",
        ),
        (
            [Hunt(CASE, "NVIDIA L4", 3), Hunt(CASE, "NVIDIA A100", 5)],
            "8 attempts in 2 tests, none saw it; no sighting recorded on NVIDIA L4, NVIDIA A100: the chance of a miss cannot be bounded; "
            "each test leaves a rate up to 64% per attempt open (95% confidence)",
        ),
    ],
)
def test_an_unbounded_miss_names_every_unrecorded_gpu(hunts: list[Hunt], words: str) -> None:
    assert miss_odds(hunts, lambda case, gpu: None).words() == words


def test_a_hunt_on_no_named_gpu_is_never_bounded_by_a_models_record() -> None:
    """A CPU control or a device the run could not name: no model's rate says how often it fires there."""
    odds = miss_odds([Hunt(CASE, None, 5)], lambda case, gpu: H200)
    assert odds.chance is None and odds.unrecorded == ("a device the record cannot name",)


def test_a_gpu_whose_record_never_saw_the_bug_bounds_nothing() -> None:
    odds = miss_odds([Hunt(CASE, "NVIDIA A100", 50)], lambda case, gpu: A100_CLEAN)
    assert odds.chance is None and odds.unrecorded == ("NVIDIA A100",)


def test_hunts_without_a_rate_leave_the_bound_of_the_others_standing() -> None:
    """P(all missed) <= the product over the hunts with a rate: the others' factors are at most 1."""
    odds = miss_odds([Hunt(CASE, "NVIDIA H200", 10), Hunt(CASE, "NVIDIA L4", 10)], lambda case, gpu: H200 if gpu == "NVIDIA H200" else None)
    assert odds.chance == pytest.approx((1 - rate_at_least(2, 13)) ** 10)
    assert odds.words().endswith("; not counted: no sighting recorded on NVIDIA L4")


def test_the_hunts_with_a_rate_count_wherever_they_come_in_the_run() -> None:
    hunts = [Hunt(CASE, "NVIDIA L4", 10), Hunt(CASE, "NVIDIA A10", 4), Hunt(CASE, "NVIDIA H200", 10)]
    odds = miss_odds(hunts, lambda case, gpu: H200 if gpu == "NVIDIA H200" else None)
    assert odds.chance == pytest.approx((1 - rate_at_least(2, 13)) ** 10)
    assert odds.words() == (
        "24 attempts in 3 tests, none saw it; if it fires as often as recorded (NVIDIA H200: 2 in 13, at least 2.8%: at 95% confidence), "
        "a miss had a chance of at most 76%; not counted: no sighting recorded on NVIDIA L4, NVIDIA A10"
    )


def test_independent_hunts_multiply() -> None:
    odds = miss_odds([Hunt("s/t.py::test_a", "G", 5), Hunt("s/t.py::test_b[big]", "G", 7)], lambda case, gpu: H100 if case.endswith("a") else H200)
    assert odds.chance == pytest.approx(miss_chance(rate_at_least(199, 200), 5) * miss_chance(rate_at_least(2, 13), 7))
    assert odds.words() == (
        "12 attempts in 2 tests, none saw it; if it fires as often as recorded (test_a on NVIDIA H100: 199 in 200, at least 97%; "
        "test_b[big] on NVIDIA H200: 2 in 13, at least 2.8%: each at 95% confidence), a miss had a chance of at most 0.1%"
    )


def test_two_cases_alike_in_their_counts_are_two_rates() -> None:
    odds = miss_odds([Hunt("s/t.py::TestX::test_x[threads1]", "G", 9), Hunt("s/t.py::TestX::test_x[threads8]", "G", 9)], lambda case, gpu: H200)
    assert odds.rates == ("test_x[threads1] on NVIDIA H200: 2 in 13, at least 2.8%", "test_x[threads8] on NVIDIA H200: 2 in 13, at least 2.8%")
    assert "each at 95% confidence" in odds.words()


def test_no_counted_hunt_has_no_odds() -> None:
    assert miss_odds([Hunt(CASE, "G", 0)], lambda case, gpu: H200) is None
    assert miss_odds([], lambda case, gpu: H200) is None


@pytest.mark.parametrize(
    ("fraction", "up", "down"),
    [
        (0.0140, "1.4%", "1.4%"), (0.01401, "1.5%", "1.4%"), (0.923, "93%", "92%"), (0.632, "64%", "63%"),
        (3e-7, "0.1%", "0.0%"), (0.1, "10%", "10%"), (1.0, "100%", "100%"), (0.09995, "10.0%", "9.9%"), (0.0, "0.1%", "0.0%"),
    ],  # fmt: skip
)
def test_figures_in_words_round_toward_the_weaker_claim(fraction: float, up: str, down: str) -> None:
    """An upper bound never reads lower than it is, a lower bound never higher (150 attempts at 1.40%
    would read "1%" rounded to the nearest: a claim the figure does not make)."""
    assert (percent_up(fraction), percent_down(fraction)) == (up, down)


@pytest.mark.parametrize(
    ("fraction", "up", "down"),
    [
        (0.14 + 5e-11, "15%", "14%"), (0.14 + 5e-12, "14%", "14%"), (0.014 + 5e-12, "1.5%", "1.4%"), (0.014 + 5e-13, "1.4%", "1.4%"),
        (0.14 - 5e-11, "14%", "13%"), (0.14 - 5e-12, "14%", "14%"), (0.014 - 5e-12, "1.4%", "1.3%"), (0.014 - 5e-13, "1.4%", "1.4%"),
    ],  # fmt: skip
)
def test_only_a_billionth_of_a_step_is_taken_for_float_noise(fraction: float, up: str, down: str) -> None:
    """0.14 * 100 is 14.000000000000002 in floats: noise within 1e-9 of a step keeps the figure, a
    figure past it moves to the next step (5e-9 of a step does, 5e-10 does not)."""
    assert (percent_up(fraction), percent_down(fraction)) == (up, down)


def test_one_attempt_is_one_attempt() -> None:
    assert miss_odds([Hunt(CASE, None, 1)], lambda case, gpu: None).words().startswith("1 attempt, none saw it")
