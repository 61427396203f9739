"""Observation x affected -> verdict, and one verdict per bug from many tests."""

from __future__ import annotations

import pytest

from fixtures.registry import load_registry
from fixtures.verdicts import (
    CONTROL,
    DIRECT,
    ERROR,
    INCONCLUSIVE,
    NOT_OBSERVED,
    OBSERVED,
    PROXY,
    SIMULATED,
    SKIPPED,
    Observation,
    bug_verdict,
    verdict_fails_test,
    role_of_test,
    verdict_for,
)
from fixtures.versions import AffectedStatus, version_is_affected

BUGS = load_registry()


@pytest.mark.parametrize(
    ("affected", "observation", "verdict"),
    [
        (True, OBSERVED, "reproduced"),
        (False, OBSERVED, "regressed"),
        (None, OBSERVED, "regressed"),
        (True, NOT_OBSERVED, "not-reproduced"),
        (False, NOT_OBSERVED, "fixed"),
        (True, INCONCLUSIVE, "inconclusive"),
        (False, SKIPPED, "skipped"),
    ],
)
def test_verdict_for(affected: bool | None, observation: str, verdict: str) -> None:
    assert verdict_for(affected, observation) == verdict


@pytest.mark.parametrize(
    ("verdict", "kind", "fails"),
    [
        ("regressed", "race", True),
        ("regressed", "deterministic", True),
        ("not-reproduced", "deterministic", True),
        ("not-reproduced", "race", False),
        ("reproduced", "deterministic", False),
        ("fixed", "deterministic", False),
    ],
)
def test_which_verdicts_fail_their_test(verdict: str, kind: str, fails: bool) -> None:
    assert verdict_fails_test(verdict, kind) is fails


@pytest.mark.parametrize(
    ("evidence", "device_name", "role"),
    [("direct", "cuda:1", DIRECT), ("direct", "cpu", CONTROL), ("direct", None, DIRECT), ("proxy", "cpu", PROXY)],
)
def test_a_direct_test_away_from_the_symptom_is_a_control(evidence: str, device_name: str | None, role: str) -> None:
    assert role_of_test(evidence, device_name, "cuda") == role


@pytest.mark.parametrize(
    ("evidence", "device_name", "symptom_device", "simulable", "role"),
    [
        ("direct", "simcuda:1", "cuda", True, SIMULATED),
        ("direct", "simcuda:0", "cuda", True, SIMULATED),
        ("direct", "simcuda:1", "cuda", False, CONTROL),  # a race or CUDA-graph bug: the simulation cannot show it
        ("direct", "simcuda:1", "cpu", True, CONTROL),
        ("proxy", "simcuda:1", "cuda", True, PROXY),
        ("direct", "cuda:1", "cuda", True, DIRECT),  # a real GPU stays direct
    ],
)
def test_a_simulated_run_is_evidence_only_for_a_simulable_bug(
    evidence: str, device_name: str, symptom_device: str, simulable: bool, role: str
) -> None:
    assert role_of_test(evidence, device_name, symptom_device, simulable) == role


@pytest.mark.parametrize(
    ("bug_id", "version", "affected"),
    [
        ("kornia-2791", "0.7.1", True),
        ("kornia-2791", "0.7.2", False),
        ("kornia-2791", "0.6.9", False),
        ("kornia-2837", "0.7.2-dev", True),  # the checkout between the bug and its fix
        ("kornia-2837", "0.7.1", False),
        ("torchvision-8855", "0.21.0+cu124", True),
        ("torchvision-8855", "0.22.0", False),
        ("torchvision-8587", "0.21.1rc1", True),
        # PEP 440: "<0.22.0" excludes 0.22.0's own pre-releases, which carry the fix.
        ("torchvision-8587", "0.22.0rc1", False),
        ("torchvision-8587", "not-a-version", None),
    ],
)
def test_version_is_affected(bug_id: str, version: str, affected: bool | None) -> None:
    assert version_is_affected(BUGS[bug_id], version) is affected


FIXED_RELEASE = AffectedStatus(False, "9.9", "version 9.9")
AFFECTED_RELEASE = AffectedStatus(True, "0.7.1", "version 0.7.1")


def obs(role: str, observation: str, detail: str = "") -> Observation:
    return Observation(f"suites/x.py::t[{role}-{observation}]", role, observation, detail)


def test_an_observation_anywhere_decides_and_direct_names_the_evidence() -> None:
    verdict = bug_verdict(
        BUGS["kornia-2791"], FIXED_RELEASE, [obs(PROXY, OBSERVED, "pl unregistered"), obs(DIRECT, OBSERVED, "wrong")]
    )
    assert (verdict.verdict, verdict.evidence, verdict.detail) == ("regressed", DIRECT, "wrong")


@pytest.mark.parametrize(
    ("observations", "verdict", "evidence"),
    [
        # On a CPU-only machine the simulated symptom decides over the meta proxy...
        ([(PROXY, OBSERVED), (SIMULATED, OBSERVED)], "regressed", SIMULATED),
        ([(PROXY, NOT_OBSERVED), (SIMULATED, NOT_OBSERVED)], "fixed", SIMULATED),
        ([(PROXY, INCONCLUSIVE), (SIMULATED, NOT_OBSERVED)], "fixed", SIMULATED),
        # ...and a real GPU decides over both.
        ([(SIMULATED, OBSERVED), (DIRECT, OBSERVED), (PROXY, OBSERVED)], "regressed", DIRECT),
        ([(SIMULATED, NOT_OBSERVED), (DIRECT, NOT_OBSERVED)], "fixed", DIRECT),
        # Seen beats not seen, whatever saw it; what the simulation cannot run decides nothing.
        ([(SIMULATED, NOT_OBSERVED), (PROXY, OBSERVED)], "regressed", PROXY),
        ([(SIMULATED, INCONCLUSIVE), (PROXY, NOT_OBSERVED)], "fixed", PROXY),
        ([(SIMULATED, INCONCLUSIVE), (PROXY, INCONCLUSIVE)], "inconclusive", SIMULATED),
        ([(CONTROL, OBSERVED), (SIMULATED, SKIPPED)], "skipped", None),
    ],
)
def test_direct_beats_simulated_beats_proxy(observations: list[tuple[str, str]], verdict: str, evidence: str | None) -> None:
    decided = bug_verdict(BUGS["kornia-2791"], FIXED_RELEASE, [obs(role, seen) for role, seen in observations])
    assert (decided.verdict, decided.evidence) == (verdict, evidence)


def test_controls_and_errors_decide_nothing() -> None:
    verdict = bug_verdict(
        BUGS["kornia-2791"], AFFECTED_RELEASE, [obs(CONTROL, OBSERVED), obs(PROXY, ERROR), obs(DIRECT, SKIPPED, "no gpu")]
    )
    assert (verdict.verdict, verdict.evidence, verdict.detail) == ("skipped", None, "no gpu")


def test_inconclusive_proxy_only() -> None:
    verdict = bug_verdict(BUGS["kornia-2837"], FIXED_RELEASE, [obs(PROXY, INCONCLUSIVE, ".item() on meta")])
    assert (verdict.verdict, verdict.evidence) == ("inconclusive", PROXY)


def test_no_tests_at_all() -> None:
    verdict = bug_verdict(BUGS["sam2-460"], FIXED_RELEASE, [])
    assert (verdict.verdict, verdict.detail) == ("skipped", "no test for this bug ran")
