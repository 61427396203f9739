"""The GPU runner, rehearsed on the CPU (issue 19). Each test emulates one condition that only a GPU
runner meets and that would change a verdict there, and checks that the verdict is the one a CPU
machine gives (or the one the bug deserves). Every emulation failed on the code before its fix;
the commit pairs are listed in the closing note of issue 19. The conditions:

- an intermittent race inside Hypothesis (fires on one example, not on Hypothesis's replay);
"""

from __future__ import annotations

from pathlib import Path

import pytest

ENTRY = """
[{bug_id}]
title = "a fake race of pytest"
package = "pytest"
affected = "{affected}"
first_fixed = "999"
issue = "https://example.invalid/issues/1"
kind = "race"
symptom_device = "cuda"
"""
# The installed pytest is inside ">=1" and outside "<1".
RACES = {"affected-race": ">=1", "fixed-race": "<1"}


@pytest.fixture
def race_registry(tmp_path: Path) -> Path:
    path = tmp_path / "bugs.toml"
    path.write_text("".join(ENTRY.format(bug_id=bug_id, affected=affected) for bug_id, affected in RACES.items()))
    return path


# A race that fires on the first generated example and never again: Hypothesis replays the
# failing example to shrink it, sees it pass, and raises FlakyFailure (an exception group)
# around the oracle's BugObserved. On a GPU runner the JPEG race tests meet exactly this.
FLAKY_RACE = """
import pytest
from hypothesis import given, settings, strategies as st

from fixtures.known_bugs.outcomes import BugObserved

CALLS = []


@pytest.mark.known_bug("{bug_id}", evidence="proxy")
@settings(max_examples=5, database=None, derandomize=True)
@given(st.integers(0, 10))
def test_race(frame):
    CALLS.append(frame)
    if len(CALLS) == 1:
        raise BugObserved(f"frame {{frame}} corrupted")
"""


@pytest.mark.parametrize(("bug_id", "verdict", "outcome"), [("affected-race", "reproduced", "xfailed"), ("fixed-race", "regressed", "failed")])
def test_an_intermittent_race_inside_hypothesis_is_a_sighting(harness, race_registry, bug_id, verdict, outcome) -> None:
    harness.makepyfile(FLAKY_RACE.format(bug_id=bug_id))
    result = harness.runpytest(f"--bug-registry={race_registry}", "-p", "no:cacheprovider")
    result.assert_outcomes(**{outcome: 1})
    result.stdout.fnmatch_lines([f"{bug_id}*{verdict}*proxy*frame * corrupted*"])
