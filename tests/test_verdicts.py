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
    PRECEDENCE,
    Observation,
    bug_verdict,
    decisive_observation,
    verdict_fails_test,
    role_of_test,
    verdict_for,
    verdict_of_test,
)
from fixtures import versions
from fixtures.versions import AffectedStatus, affected_status, place_release, version_is_affected

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
        ("error", "race", True),
        ("error", "deterministic", True),
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


@pytest.mark.parametrize(("evidence", "device_name"), [("direct", "cuda:0"), ("proxy", None), ("direct", "cpu")])
def test_a_test_of_the_harness_stand_in_is_a_control_anywhere(evidence: str, device_name: str | None) -> None:
    assert role_of_test(evidence, device_name, "cuda", stand_in=True) == CONTROL


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
        ("sam2-460", "0.4.1", True),
        ("sam2-460", "1.1.0", False),
        ("sam2-460", "1.0", None),  # git builds say 1.0 on both sides of PR 486: the probe places it
        ("sam2-460", "1.0.0", None),  # PEP 440: 1.0 == 1.0.0
    ],
)
def test_version_is_affected(bug_id: str, version: str, affected: bool | None) -> None:
    assert version_is_affected(BUGS[bug_id], version) is affected


FIXED_RELEASE = AffectedStatus(False, "9.9", "version 9.9")
AFFECTED_RELEASE = AffectedStatus(True, "0.7.1", "version 0.7.1")
UNPLACED_RELEASE = AffectedStatus(None, "x", "version 'x' cannot be placed, and no probe could tell")
NOT_INSTALLED = AffectedStatus(None, None, "kornia not installed")
KORNIA = BUGS["kornia-2791"]


# The version decides; the probe places only what the version cannot, and disagreeing is stated.
@pytest.mark.parametrize(
    ("version", "fix_present", "affected", "basis", "disagreement"),
    [
        ("0.4.1", None, True, "version 0.4.1", ""),
        ("0.4.1", False, True, "version 0.4.1", ""),
        ("1.1.0", True, False, "version 1.1.0", ""),
        # PR 486 undone in a release at or after first_fixed: the version decides, both facts kept.
        ("1.2.0", False, False, "version 1.2.0", "says the fix is absent, against version 1.2.0"),
        ("0.4.1", True, True, "version 0.4.1", "says the fix is present, against version 0.4.1"),
        # sam2 from git at 1.0 (ambiguous): the probe decides either way.
        ("1.0", True, False, "says the fix is present (version '1.0' cannot be placed)", ""),
        ("1.0", False, True, "says the fix is absent (version '1.0' cannot be placed)", ""),
        ("1.0", None, None, "version '1.0' cannot be placed, and no probe could tell", ""),
    ],
)
def test_place_release(version: str, fix_present: bool | None, affected: bool | None, basis: str, disagreement: str) -> None:
    status = place_release(BUGS["sam2-460"], version, fix_present)
    assert (status.affected, status.version) == (affected, version)
    assert basis in status.basis
    assert disagreement in status.disagreement and bool(status.disagreement) is bool(disagreement)


def test_sam2_from_git_saying_1_0_with_the_fix_is_placed_by_the_real_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed sam2's code (1.1.0, PR 486 in) relabelled as a git build's 1.0."""
    pytest.importorskip("sam2.modeling.position_encoding", reason="needs sam2: SAM2_BUILD_CUDA=0 pip install -e '.[sam2]'")
    monkeypatch.setattr(versions, "installed_version", lambda name: "1.0")
    status = affected_status(BUGS["sam2-460"])
    assert (status.affected, status.disagreement) == (False, "")
    assert status.basis == "probe fixtures.probes:sam2_position_cache_is_warmed says the fix is present (version '1.0' cannot be placed)"


def test_a_package_that_is_not_installed_is_not_placed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "installed_version", lambda name: None)
    assert affected_status(BUGS["sam2-460"]) == AffectedStatus(None, None, "sam2 not installed")


def test_unparsable_version_without_probe_cannot_be_placed() -> None:
    status = place_release(KORNIA, "not-a-version", None)
    assert (status.affected, status.installed) == (None, True)


# One test's verdict: (status, role, observation) -> verdict; None is a control that did its job.
@pytest.mark.parametrize(
    ("status", "role", "observation", "verdict"),
    [
        (AFFECTED_RELEASE, PROXY, OBSERVED, "reproduced"),
        (FIXED_RELEASE, DIRECT, OBSERVED, "regressed"),
        (UNPLACED_RELEASE, PROXY, OBSERVED, "regressed"),
        (UNPLACED_RELEASE, PROXY, NOT_OBSERVED, "fixed"),
        (AFFECTED_RELEASE, PROXY, NOT_OBSERVED, "not-reproduced"),
        (FIXED_RELEASE, PROXY, INCONCLUSIVE, "inconclusive"),
        (FIXED_RELEASE, DIRECT, SKIPPED, "skipped"),
        (FIXED_RELEASE, PROXY, ERROR, "error"),
        (AFFECTED_RELEASE, DIRECT, ERROR, "error"),
        (FIXED_RELEASE, CONTROL, NOT_OBSERVED, None),
        (FIXED_RELEASE, CONTROL, SKIPPED, None),
        (FIXED_RELEASE, CONTROL, INCONCLUSIVE, None),
        (FIXED_RELEASE, CONTROL, OBSERVED, "error"),  # a control that fires: oracle or harness broken
        (FIXED_RELEASE, CONTROL, ERROR, "error"),
        (NOT_INSTALLED, CONTROL, NOT_OBSERVED, None),  # the stand-in checks the oracle only
        (NOT_INSTALLED, PROXY, NOT_OBSERVED, "error"),  # ran without the package: an unmarked stand-in
        (NOT_INSTALLED, DIRECT, OBSERVED, "error"),
        (NOT_INSTALLED, PROXY, SKIPPED, "skipped"),
        (NOT_INSTALLED, PROXY, INCONCLUSIVE, "inconclusive"),
    ],
)
def test_verdict_of_one_test(status: AffectedStatus, role: str, observation: str, verdict: str | None) -> None:
    assert verdict_of_test(status, role, observation) == verdict


def obs(role: str, observation: str, detail: str = "", name: str = "") -> Observation:
    return Observation(f"suites/x.py::t[{name or role + '-' + observation}]", role, observation, detail)


def test_precedence_table_covers_every_evidence_observation_once() -> None:
    assert len(set(PRECEDENCE)) == len(PRECEDENCE) == 8
    assert {role for _, role in PRECEDENCE} == {DIRECT, PROXY}
    assert {seen for seen, _ in PRECEDENCE} == {OBSERVED, NOT_OBSERVED, INCONCLUSIVE, SKIPPED}


# The decisive (observation, role) for a set of (role, observation) tests.
@pytest.mark.parametrize(
    ("tests", "decides"),
    [
        ([(PROXY, OBSERVED), (PROXY, NOT_OBSERVED)], (OBSERVED, PROXY)),  # mixed, same strength
        ([(DIRECT, NOT_OBSERVED), (PROXY, OBSERVED)], (OBSERVED, PROXY)),
        ([(DIRECT, OBSERVED), (PROXY, OBSERVED)], (OBSERVED, DIRECT)),
        ([(PROXY, NOT_OBSERVED), (PROXY, INCONCLUSIVE)], (NOT_OBSERVED, PROXY)),
        ([(DIRECT, INCONCLUSIVE), (PROXY, NOT_OBSERVED)], (NOT_OBSERVED, PROXY)),
        ([(PROXY, INCONCLUSIVE), (DIRECT, SKIPPED)], (INCONCLUSIVE, PROXY)),
        ([(PROXY, INCONCLUSIVE), (DIRECT, INCONCLUSIVE)], (INCONCLUSIVE, DIRECT)),
        ([(DIRECT, SKIPPED), (PROXY, SKIPPED)], (SKIPPED, DIRECT)),
        ([(CONTROL, NOT_OBSERVED), (PROXY, SKIPPED)], (SKIPPED, PROXY)),
        ([(CONTROL, NOT_OBSERVED)], (SKIPPED, None)),
        ([], (SKIPPED, None)),
    ],
)
def test_decisive_observation(tests: list[tuple[str, str]], decides: tuple[str, str | None]) -> None:
    observation, role, deciding = decisive_observation([obs(r, o) for r, o in tests])
    assert (observation, role) == decides
    assert all((o.observation, o.role) == decides for o in deciding)


# The bug's verdict from a set of (role, observation) tests on a release.
@pytest.mark.parametrize(
    ("status", "tests", "verdict", "evidence"),
    [
        (FIXED_RELEASE, [(PROXY, NOT_OBSERVED), (DIRECT, NOT_OBSERVED)], "fixed", DIRECT),
        (FIXED_RELEASE, [(PROXY, NOT_OBSERVED), (PROXY, ERROR)], "error", None),  # an error is never silence
        (AFFECTED_RELEASE, [(PROXY, OBSERVED), (DIRECT, ERROR)], "error", None),
        (FIXED_RELEASE, [(PROXY, NOT_OBSERVED), (CONTROL, OBSERVED)], "error", None),
        (FIXED_RELEASE, [(PROXY, NOT_OBSERVED), (PROXY, INCONCLUSIVE)], "fixed", PROXY),
        (FIXED_RELEASE, [(PROXY, INCONCLUSIVE), (PROXY, INCONCLUSIVE)], "inconclusive", PROXY),
        (FIXED_RELEASE, [(PROXY, INCONCLUSIVE), (DIRECT, SKIPPED), (CONTROL, NOT_OBSERVED)], "inconclusive", PROXY),
        (FIXED_RELEASE, [(CONTROL, NOT_OBSERVED), (DIRECT, SKIPPED)], "skipped", None),
        (AFFECTED_RELEASE, [(PROXY, OBSERVED), (PROXY, NOT_OBSERVED)], "reproduced", PROXY),
        (FIXED_RELEASE, [(PROXY, OBSERVED), (PROXY, NOT_OBSERVED)], "regressed", PROXY),
        # No package, no verdict: whatever the controls (a stand-in) saw or did not see.
        (NOT_INSTALLED, [(CONTROL, NOT_OBSERVED), (PROXY, SKIPPED)], "skipped", None),
        (NOT_INSTALLED, [], "skipped", None),
        (NOT_INSTALLED, [(PROXY, NOT_OBSERVED)], "error", None),
        (NOT_INSTALLED, [(DIRECT, SKIPPED), (PROXY, ERROR)], "error", None),
    ],
)
def test_bug_verdict_table(status: AffectedStatus, tests: list[tuple[str, str]], verdict: str, evidence: str | None) -> None:
    result = bug_verdict(KORNIA, status, [obs(r, o, name=f"{i}") for i, (r, o) in enumerate(tests)])
    assert (result.verdict, result.evidence) == (verdict, evidence)


def test_an_observation_anywhere_decides_and_direct_names_the_evidence() -> None:
    verdict = bug_verdict(KORNIA, FIXED_RELEASE, [obs(PROXY, OBSERVED, "pl unregistered"), obs(DIRECT, OBSERVED, "wrong")])
    assert (verdict.verdict, verdict.evidence, verdict.detail) == ("regressed", DIRECT, "wrong")


def test_mixed_evidence_names_who_saw_it_and_who_did_not() -> None:
    tests = [obs(PROXY, OBSERVED, "pl unregistered", "a"), obs(PROXY, NOT_OBSERVED, name="b"), obs(PROXY, NOT_OBSERVED, name="c")]
    verdict = bug_verdict(KORNIA, AFFECTED_RELEASE, tests)
    assert verdict.verdict == "reproduced" and verdict.tests == ("suites/x.py::t[a]",)
    assert verdict.detail == "pl unregistered; observed in t[a]; not observed in t[b], t[c]"


def test_what_could_not_decide_is_named_beside_a_fixed_verdict() -> None:
    verdict = bug_verdict(KORNIA, FIXED_RELEASE, [obs(PROXY, NOT_OBSERVED, name="a"), obs(PROXY, INCONCLUSIVE, name="m")])
    assert (verdict.verdict, verdict.detail) == ("fixed", "1 test(s); inconclusive in t[m]")


def test_long_name_lists_are_cut() -> None:
    tests = [obs(PROXY, OBSERVED, name="seen")] + [obs(PROXY, NOT_OBSERVED, name=str(i)) for i in range(7)]
    assert "not observed in t[0], t[1], t[2], t[3] and 3 more" in bug_verdict(KORNIA, AFFECTED_RELEASE, tests).detail


def test_error_lists_the_failing_tests_and_their_errors() -> None:
    tests = [obs(PROXY, OBSERVED, "seen", "a"), obs(PROXY, ERROR, "TypeError: boom", "b"), obs(CONTROL, OBSERVED, "fired", "c")]
    verdict = bug_verdict(KORNIA, AFFECTED_RELEASE, tests)
    assert verdict.verdict == "error"
    assert verdict.tests == ("suites/x.py::t[b]", "suites/x.py::t[c]")
    assert verdict.detail == "2 test(s) errored: TypeError: boom; fired"


def test_not_installed_is_skipped_with_that_reason() -> None:
    verdict = bug_verdict(KORNIA, NOT_INSTALLED, [obs(CONTROL, NOT_OBSERVED), obs(PROXY, SKIPPED, "no sam2")])
    assert (verdict.verdict, verdict.detail) == ("skipped", "kornia not installed")


def test_a_disagreeing_probe_is_stated_beside_the_verdict() -> None:
    status = place_release(BUGS["sam2-460"], "1.2.0", False)
    verdict = bug_verdict(BUGS["sam2-460"], status, [obs(PROXY, OBSERVED, "cache answers on cpu")])
    assert verdict.verdict == "regressed"
    assert verdict.detail == (
        "cache answers on cpu; probe fixtures.probes:sam2_position_cache_is_warmed says the fix is absent, "
        "against version 1.2.0"
    )


def test_inconclusive_proxy_only() -> None:
    verdict = bug_verdict(BUGS["kornia-2837"], FIXED_RELEASE, [obs(PROXY, INCONCLUSIVE, ".item() on meta")])
    assert (verdict.verdict, verdict.evidence) == ("inconclusive", PROXY)


def test_no_tests_at_all() -> None:
    verdict = bug_verdict(BUGS["sam2-460"], FIXED_RELEASE, [])
    assert (verdict.verdict, verdict.detail) == ("skipped", "no test for this bug ran")
