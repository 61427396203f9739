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
    SKIPPED,
    Observation,
    bug_verdict,
    regressed_message,
    stale_registry_message,
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


def test_messages_read_sensibly_for_a_bug_with_no_fix_yet() -> None:
    registry = load_registry()
    below_range = AffectedStatus(False, "0.18.0", "version 0.18.0")
    message = regressed_message(registry["torchvision-9606"], below_range, "a freed tensor summed to 3")
    assert "outside the affected range >=0.19.0; no release fixes it yet." in message
    assert "None" not in message
    stale = stale_registry_message(registry["torchvision-9606"], AffectedStatus(True, "0.29.2", "version 0.29.2"))
    assert "None" not in stale and "first_fixed" in stale
    fixed = regressed_message(registry["torchvision-8587"], AffectedStatus(False, "0.29.2", "version 0.29.2"), "noise")
    assert "fixed in 0.22.0 by https://github.com/pytorch/vision/pull/8929." in fixed
