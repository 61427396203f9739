"""The GPU runner, rehearsed on the CPU (issue 19). Each test emulates one condition that only a GPU
runner meets and that would change a verdict there, and checks that the verdict is the one a CPU
machine gives (or the one the bug deserves). Every emulation failed on the code before its fix;
the commit pairs are listed in the closing note of issue 19. The conditions:

- an intermittent race inside Hypothesis (fires on one example, not on Hypothesis's replay);
- a skipped or inconclusive test isolated in a fresh process (pytest-isolated, on a GPU runner);
- the serial step's parent process crashing after its isolated children ran;
- a sticky CUDA error, then tests with no device parameter that touch CUDA anyway;
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import torch

from reports.acceptance.summary import combined_lines, missing_results_lines
from reports.run.loading import ResultsError, load_results

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


# What `isolated_on_gpu` becomes where its GPU is visible: pytest-isolated's fresh process.
ISOLATED_SKIPS = """
import pytest

from fixtures.known_bugs.outcomes import Inconclusive


@pytest.mark.isolated
def test_skipped_in_the_child():
    pytest.skip("no frame decoded on this GPU")


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.isolated
def test_inconclusive_in_the_child():
    raise Inconclusive("no CUDA graph was recorded, so the bug could not show")
"""
REASONS = {
    "test_skipped_in_the_child": "no frame decoded on this GPU",
    "test_inconclusive_in_the_child": "inconclusive: no CUDA graph was recorded, so the bug could not show",
}


def test_an_isolated_tests_skip_reason_arrives_as_written(harness, tmp_path: Path) -> None:
    harness.makepyfile(ISOLATED_SKIPS)
    result = harness.runpytest_subprocess(f"--report-dir={tmp_path}", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2)
    tests = {test["nodeid"].rsplit("::", 1)[-1]: test for test in json.loads((tmp_path / "results.json").read_text())["tests"]}
    assert {name: test["message"] for name, test in tests.items()} == REASONS
    junit = {case.get("name"): case.find("skipped").get("message") for case in ElementTree.parse(tmp_path / "junit.xml").iter("testcase")}
    assert junit == REASONS
    verdict = next(v for v in json.loads((tmp_path / "results.json").read_text())["verdicts"] if v["bug_id"] == "kornia-2791")
    assert verdict["verdict"] == "inconclusive" and verdict["detail"].startswith("no CUDA graph was recorded"), verdict
    for reason in REASONS.values():
        result.stdout.fnmatch_lines([f"SKIPPED*{reason}"])
    page = (tmp_path / "report.html").read_text()
    assert f"('{harness.path}" not in page  # no stringified (path, line, reason) tuple
    assert all(f"<summary>1 &times; {reason}</summary>" in page for reason in REASONS.values())


# The serial step: isolated children run first, then the parent process dies (a segfault in a
# plain GPU test, an out-of-memory kill) before it can write its reports.
PARENT_CRASHES = """
import os

import pytest


@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.isolated
def test_isolated_child():
    pass


def test_z_parent_dies():
    os._exit(9)
"""


def test_isolated_children_never_write_the_parents_reports(harness, tmp_path: Path) -> None:
    harness.makepyfile(PARENT_CRASHES)
    serial = tmp_path / "serial"
    result = harness.runpytest_subprocess(f"--report-dir={serial}", "-p", "no:cacheprovider")
    assert result.ret == 9
    assert not (serial / "results.json").exists(), "an isolated child wrote the parent's results.json"
    with pytest.raises(ResultsError) as missing:
        load_results(serial / "results.json")
    assert missing_results_lines("serial", str(missing.value))[0].startswith("[serial] no results.json (crashed?)")
    assert combined_lines({"serial": None})[0].endswith("serial: no results.json, counted as error")


# On a GPU runner a sticky error (an illegal memory access) leaves the process's CUDA context
# unusable, and every later CUDA call fails with the same text: also in tests that take no device
# parameter but touch CUDA (sam2 1.1.0 warms its cache on CUDA in __init__, so its proxy does;
# kornia <= 0.7.1 builds `pl` on cuda:0 in its proxy and the state sweep).
AFTER_A_STICKY_ERROR = """
import pytest

from fixtures.known_bugs.outcomes import BugObserved

STICKY = "CUDA error: an illegal memory access was encountered"


@pytest.mark.known_bug("kornia-2791")
def test_a_poisons(device):
    if device == "cuda:0":
        raise RuntimeError(STICKY)


@pytest.mark.known_bug("kornia-2837", evidence="proxy")
def test_b_proxy_that_touches_cuda_in_its_library():
    raise RuntimeError(STICKY)  # what the library's CUDA call raises in the poisoned process
"""


def test_after_a_sticky_cuda_error_no_later_test_is_charged_with_it(harness, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    harness.makepyfile(AFTER_A_STICKY_ERROR)
    result = harness.runpytest("--device", "cpu,cuda:0", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*CUDA context unusable in this process since *test_a_poisons?cuda:0? hit a sticky error*"])
    result.stdout.fnmatch_lines(["kornia-2837*skipped*CUDA context unusable*"])
    result.stdout.fnmatch_lines(["kornia-2791*error*"])  # the test that hit it is the one charged
