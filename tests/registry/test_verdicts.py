"""Observation x affected -> verdict, and one verdict per bug from many tests."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.specifiers import SpecifierSet

from fixtures.known_bugs import versions
from fixtures.known_bugs.registry import Bug, load_registry
from fixtures.known_bugs.verdicts import (
    CONTROL,
    DIRECT,
    ERROR,
    INCONCLUSIVE,
    NOT_AFFECTED,
    NOT_OBSERVED,
    OBSERVED,
    PRECEDENCE,
    PROXY,
    SIMULATED,
    SKIPPED,
    BugVerdict,
    Observation,
    bug_verdict,
    control_fired_message,
    decided_by_skips,
    decisive_observation,
    not_installed_message,
    regressed_message,
    reproduced_reason,
    role_of_test,
    stale_registry_message,
    stopped_verdict,
    verdict_fails_test,
    verdict_for,
    verdict_of_test,
)
from fixtures.known_bugs.versions import AffectedStatus, affected_status, place_release, version_is_affected, version_predates
from fixtures.races.miss import Hunt
from fixtures.races.odds import rate_at_least
from fixtures.races.record import Trial

BUGS = load_registry()


@pytest.mark.parametrize(
    ("affected", "observation", "verdict"),
    [
        (True, OBSERVED, "reproduced"),
        (False, OBSERVED, "regressed"),
        (None, OBSERVED, "unplaced"),  # nothing placed the release: no regression is claimed, the run fails all the same
        (None, NOT_OBSERVED, "inconclusive"),
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
    [
        ("direct", "cuda:1", DIRECT),
        ("direct", "cpu", CONTROL),
        ("direct", None, CONTROL),  # names no device: nothing says it ran on a GPU
        ("direct", "cuda", DIRECT),  # a test marked min_cuda_devices, which skips without them
        ("proxy", "cpu", PROXY),
        ("direct", "simcuda:1", CONTROL),  # a bug is simulable only where the registry says so
    ],
)
def test_a_direct_test_away_from_the_symptom_is_a_control(evidence: str, device_name: str | None, role: str) -> None:
    assert role_of_test(evidence, device_name, "cuda") == role


def test_a_direct_test_of_a_cpu_symptom_needs_no_device() -> None:
    assert role_of_test("direct", None, "cpu") == DIRECT


@pytest.mark.parametrize(("evidence", "device_name"), [("direct", "cuda:0"), ("proxy", None), ("direct", "cpu")])
def test_a_test_of_the_harness_stand_in_is_a_control_anywhere(evidence: str, device_name: str | None) -> None:
    assert role_of_test(evidence, device_name, "cuda", stand_in=True) == CONTROL


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
        # A development build names any commit of its series: only its commit places it (commits.py).
        ("kornia-2837", "0.7.2-dev", None),
        ("kornia-2867", "0.7.2.dev0", None),  # PEP 440 would put it below ">=0.7.2": unaffected
        ("kornia-2837", "0.7.1", False),
        ("torchvision-8855", "0.21.0+cu124", True),
        ("torchvision-8855", "0.22.0", False),
        ("torchvision-8587", "0.21.1rc1", True),
        # A pre-release reads as the release it leads to: 0.22.0's candidates carry its fix (PEP 440's
        # own reading of "<0.22.0"), and the first affected release's candidates carry the bug.
        ("torchvision-8587", "0.22.0rc1", False),
        ("torchvision-8587", "0.19.0rc1", True),
        ("torchvision-9606", "0.19.0b2", True),
        ("torchvision-8855", "0.16.0rc1+cu121", True),
        ("kornia-2867", "0.7.2rc1", True),
        ("kornia-2867", "0.8.2rc1", False),
        ("sam2-460", "1.0rc1", None),  # the ambiguous 1.0's candidate: as ambiguous as 1.0
        # A build from source names its commit in its local label: PEP 440 would put it below
        # "<0.22.0" (affected) or at a release, whatever its commit holds.
        ("torchvision-8587", "0.22.0a0+7a13ad0", None),
        ("torchvision-8855", "0.22.0a0+git7a13ad0", None),
        ("torchvision-8855", "0.21.0a0+ecf3bae40a.nv25.01", None),  # an NVIDIA container's build
        # A tree built where git is missing says alpha 0 with no label (its version.txt); an alpha
        # that is not 0 is a release's pre-release, read as the release.
        ("torchvision-8855", "0.22.0a0", None),
        ("torchvision-8587", "0.22.0a0", None),
        ("torch-48419", "2.10.0a0+gitunknown", None),
        ("torchvision-8587", "0.22.0a1", False),
        ("torchvision-8855", "0.21.0+cpu", True),  # a platform label places like the release
        ("torchvision-8855", "0.21.0+rocm6.2", True),
        ("torchvision-8587", "not-a-version", None),
        ("sam2-460", "0.4.1", True),
        ("sam2-460", "1.1.0", False),
        ("sam2-460", "1.0", None),  # git builds say 1.0 on both sides of PR 486: the probe places it
        ("sam2-460", "1.0.0", None),  # PEP 440: 1.0 == 1.0.0
    ],
)
def test_version_is_affected(bug_id: str, version: str, affected: bool | None) -> None:
    assert version_is_affected(BUGS[bug_id], version) is affected


@pytest.mark.parametrize(("version", "affected"), [("0.19.0rc1", True), ("0.22.0rc1", True), ("0.22.0rc2", False), ("0.22.0", False)])
def test_a_range_naming_a_pre_release_reads_that_releases_candidates_as_themselves(version: str, affected: bool) -> None:
    """`<0.22.0rc2`: the fix landed between two candidates, so the candidates of 0.22.0 are placed
    one by one; the candidates of another release still read as that release."""
    fixed_in_rc2 = replace(BUGS["torchvision-8587"], affected=SpecifierSet(">=0.19.0,<0.22.0rc2"))
    assert version_is_affected(fixed_in_rc2, version) is affected


AMBIGUOUS_RC1 = replace(BUGS["kornia-2867"], ambiguous=SpecifierSet("==0.7.2rc1"))


@pytest.mark.parametrize(("version", "affected"), [("0.7.2rc1", None), ("0.7.2rc2", True), ("0.7.2", True), ("0.7.1rc1", False)])
def test_an_ambiguous_candidate_is_unplaced_and_moves_no_other_candidate(version: str, affected: bool | None) -> None:
    """`ambiguous = "==0.7.2rc1"`: that candidate's build cannot be placed, which says nothing of
    where the range begins, so 0.7.2's other candidates still read as 0.7.2: a sighting on 0.7.2rc2
    is the bug as known, never a regression before the range."""
    assert version_is_affected(AMBIGUOUS_RC1, version) is affected


def test_a_dev_build_inside_the_ambiguous_versions_cannot_be_placed_either() -> None:
    git_series = replace(BUGS["sam2-460"], ambiguous=SpecifierSet("==1.0.*"))
    assert version_is_affected(git_series, "1.0.1.dev0") is None


FIXED_RELEASE = AffectedStatus(False, "9.9", "version 9.9")
AFFECTED_RELEASE = AffectedStatus(True, "0.7.1", "version 0.7.1")
UNPLACED_RELEASE = AffectedStatus(None, "x", "version 'x' cannot be placed, and no probe could tell")
NOT_INSTALLED = AffectedStatus(None, None, "kornia not installed")
KORNIA = BUGS["kornia-2791"]


# The version decides; the probe places only what the version cannot, and disagreeing is stated.
SAM2_PROBE = BUGS["sam2-460"].probe


@pytest.mark.parametrize(
    ("version", "fix_present", "affected", "basis", "disagreement"),
    [
        ("0.4.1", None, True, "version 0.4.1", ""),
        ("0.4.1", False, True, "version 0.4.1", ""),
        ("1.1.0", True, False, "version 1.1.0", ""),
        # PR 486 undone in a release at or after first_fixed: the version decides, both facts kept.
        ("1.2.0", False, False, "version 1.2.0", f"probe {SAM2_PROBE} says the fix is absent, against version 1.2.0"),
        ("0.4.1", True, True, "version 0.4.1", f"probe {SAM2_PROBE} says the fix is present, against version 0.4.1"),
        # sam2 from git at 1.0 (ambiguous): the probe decides either way.
        ("1.0", True, False, f"probe {SAM2_PROBE} says the fix is present (version '1.0' cannot be placed)", ""),
        ("1.0", False, True, f"probe {SAM2_PROBE} says the fix is absent (version '1.0' cannot be placed)", ""),
        ("1.0", None, None, "version '1.0' cannot be placed, and no probe could tell", ""),
    ],
)
def test_place_release(version: str, fix_present: bool | None, affected: bool | None, basis: str, disagreement: str) -> None:
    status = place_release(BUGS["sam2-460"], version, fix_present)
    assert (status.affected, status.version, status.basis, status.disagreement) == (affected, version, basis, disagreement)


def test_sam2_from_git_saying_1_0_with_the_fix_is_placed_by_the_real_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed sam2's code (1.1.0, PR 486 in) relabelled as a git build's 1.0."""
    pytest.importorskip("sam2.modeling.position_encoding", reason="needs sam2: SAM2_BUILD_CUDA=0 pip install -e '.[sam2]'")
    monkeypatch.setattr(versions, "installed_version", lambda name: "1.0")
    status = affected_status(BUGS["sam2-460"])
    assert (status.affected, status.disagreement) == (False, "")
    assert status.basis == "probe fixtures.known_bugs.probes:sam2_position_cache_is_warmed says the fix is present (version '1.0' cannot be placed)"


def test_a_package_that_is_not_installed_is_not_placed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "installed_version", lambda name: None)
    assert affected_status(BUGS["sam2-460"]) == AffectedStatus(None, None, "sam2 not installed")


def test_unparsable_version_without_probe_cannot_be_placed() -> None:
    status = place_release(KORNIA, "not-a-version", None)
    assert (status.affected, status.installed) == (None, True)
    assert status.basis == "version 'not-a-version' cannot be placed, and no probe could tell"  # not a development build


# One test's verdict: (status, role, observation) -> verdict; None is a control that did its job.
@pytest.mark.parametrize(
    ("status", "role", "observation", "verdict"),
    [
        (AFFECTED_RELEASE, PROXY, OBSERVED, "reproduced"),
        (FIXED_RELEASE, DIRECT, OBSERVED, "regressed"),
        (UNPLACED_RELEASE, PROXY, OBSERVED, "unplaced"),
        (UNPLACED_RELEASE, PROXY, NOT_OBSERVED, "inconclusive"),  # nothing says a fix is there
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
    assert len(set(PRECEDENCE)) == len(PRECEDENCE) == 12
    assert {role for _, role in PRECEDENCE} == {DIRECT, SIMULATED, PROXY}
    assert {seen for seen, _ in PRECEDENCE} == {OBSERVED, NOT_OBSERVED, INCONCLUSIVE, SKIPPED}


# The decisive (observation, role) for a set of (role, observation) tests.
@pytest.mark.parametrize(
    ("tests", "decides"),
    [
        ([(PROXY, OBSERVED), (PROXY, NOT_OBSERVED)], (OBSERVED, PROXY)),  # mixed, same strength
        ([(DIRECT, NOT_OBSERVED), (PROXY, OBSERVED)], (NOT_OBSERVED, DIRECT)),  # the stronger decides
        ([(SIMULATED, NOT_OBSERVED), (PROXY, OBSERVED)], (NOT_OBSERVED, SIMULATED)),
        ([(DIRECT, INCONCLUSIVE), (SIMULATED, OBSERVED)], (OBSERVED, SIMULATED)),  # cannot tell decides nothing
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


def test_weaker_evidence_that_disagrees_is_named() -> None:
    tests = [obs(SIMULATED, NOT_OBSERVED, name="sim"), obs(PROXY, OBSERVED, "pl unregistered", "meta")]
    verdict = bug_verdict(KORNIA, FIXED_RELEASE, tests)
    assert (verdict.verdict, verdict.evidence) == ("fixed", SIMULATED)
    assert verdict.detail == "1 test(s); observed in t[meta]; not observed in t[sim]"


def test_only_controls_ran_says_so() -> None:
    verdict = bug_verdict(KORNIA, FIXED_RELEASE, [obs(CONTROL, NOT_OBSERVED), obs(DIRECT, SKIPPED, "no gpu")])
    assert (verdict.verdict, verdict.detail) == ("skipped", "no gpu; 1 control(s) ran: they check the oracle and decide nothing")


def test_controls_that_could_not_run_make_the_bug_inconclusive_naming_why() -> None:
    """The simulated runner's nvJPEG tests: controls there (the simulation cannot show the bug),
    refused: the bug is inconclusive naming the refusal, never a skip that says nothing ran."""
    refused = "the simulated device cannot run this: nvJPEG (torchvision.io.encode_jpeg on cuda)"
    tests = [obs(CONTROL, INCONCLUSIVE, refused, "cuda0"), obs(CONTROL, NOT_OBSERVED, name="cpu")]
    verdict = bug_verdict(KORNIA, FIXED_RELEASE, tests)
    assert (verdict.verdict, verdict.evidence) == ("inconclusive", None)
    assert verdict.detail.startswith(refused), verdict.detail
    assert bug_verdict(KORNIA, FIXED_RELEASE, [obs(SIMULATED, NOT_OBSERVED, name="s"), *tests]).verdict == "fixed"  # evidence still decides


@pytest.mark.parametrize(
    ("device_name", "symptom_device", "simulable", "role"),
    [
        ("cuda:0", "cuda", True, SIMULATED),  # the runner's CUDA is the simulated device
        ("cuda:1", "cuda", False, CONTROL),  # ... which cannot show an nvJPEG race
        ("cuda", "cuda", True, SIMULATED),
        (None, "cuda", True, CONTROL),
        ("cpu", "cpu", True, DIRECT),  # its CPU is a real CPU
        ("cpu", "cuda", True, CONTROL),
    ],
)
def test_on_the_simulated_runner_nothing_is_direct_gpu_evidence(device_name: str | None, symptom_device: str, simulable: bool, role: str) -> None:
    assert role_of_test("direct", device_name, symptom_device, simulable, runner=True) == role


def test_a_quiet_control_beside_a_reproduction_is_not_evidence_against_it() -> None:
    tests = [obs(SIMULATED, OBSERVED, "moved output differs", "sim"), obs(CONTROL, NOT_OBSERVED, name="ctl")]
    verdict = bug_verdict(KORNIA, AFFECTED_RELEASE, tests)
    assert (verdict.verdict, verdict.detail) == ("reproduced", "moved output differs")


def test_controls_are_mentioned_only_when_nothing_decided() -> None:
    tests = [obs(PROXY, NOT_OBSERVED, name="a"), obs(CONTROL, NOT_OBSERVED, name="ctl")]
    assert bug_verdict(KORNIA, FIXED_RELEASE, tests).detail == "1 test(s)"
    tests = [obs(PROXY, INCONCLUSIVE, "cannot tell", "m"), obs(CONTROL, NOT_OBSERVED, name="ctl")]
    assert bug_verdict(KORNIA, FIXED_RELEASE, tests).detail == "cannot tell; 1 control(s) ran: they check the oracle and decide nothing"


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
    assert (verdict.verdict, verdict.tests, verdict.detail) == ("skipped", (), "kornia not installed")


DISAGREEING_PROBE = replace(FIXED_RELEASE, disagreement="probe m:f says the fix is absent, against version 9.9")


# What the detail adds beside the deciding tests: the probe's contrary word and why the release
# cannot be placed once something decided; the controls only where nothing did.
@pytest.mark.parametrize(
    ("status", "tests", "detail"),
    [
        (DISAGREEING_PROBE, [(PROXY, OBSERVED)], "1 test(s); probe m:f says the fix is absent, against version 9.9"),
        (DISAGREEING_PROBE, [(DIRECT, SKIPPED)], "1 test(s)"),
        (UNPLACED_RELEASE, [(PROXY, NOT_OBSERVED)], "1 test(s); version 'x' cannot be placed, and no probe could tell"),
        (UNPLACED_RELEASE, [(DIRECT, SKIPPED)], "1 test(s)"),
        (FIXED_RELEASE, [(PROXY, INCONCLUSIVE)], "1 test(s)"),
        (
            FIXED_RELEASE,
            [(CONTROL, NOT_OBSERVED), (CONTROL, NOT_OBSERVED), (PROXY, INCONCLUSIVE)],
            "1 test(s); 2 control(s) ran: they check the oracle and decide nothing",
        ),
    ],
)
def test_bug_verdict_detail(status: AffectedStatus, tests: list[tuple[str, str]], detail: str) -> None:
    assert bug_verdict(KORNIA, status, [obs(r, o) for r, o in tests]).detail == detail


def test_names_are_the_test_part_of_the_id_and_four_are_not_cut() -> None:
    unseen = [Observation(f"suites/x.py::TestEncode::t[{i}]", PROXY, NOT_OBSERVED) for i in range(4)]
    verdict = bug_verdict(KORNIA, AFFECTED_RELEASE, [obs(PROXY, OBSERVED, name="seen"), *unseen])
    assert verdict.detail == "1 test(s); observed in t[seen]; not observed in t[0], t[1], t[2], t[3]"


def test_a_disagreeing_probe_is_stated_beside_the_verdict() -> None:
    status = place_release(BUGS["sam2-460"], "1.2.0", False)
    verdict = bug_verdict(BUGS["sam2-460"], status, [obs(PROXY, OBSERVED, "cache answers on cpu")])
    assert verdict.verdict == "regressed"
    assert verdict.detail == (
        "cache answers on cpu; probe fixtures.known_bugs.probes:sam2_position_cache_is_warmed says the fix is absent, "
        "against version 1.2.0"
    )


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
        # The strongest evidence that decided wins; what the simulation cannot run decides nothing.
        ([(SIMULATED, NOT_OBSERVED), (PROXY, OBSERVED)], "fixed", SIMULATED),
        ([(SIMULATED, INCONCLUSIVE), (PROXY, NOT_OBSERVED)], "fixed", PROXY),
        ([(SIMULATED, INCONCLUSIVE), (PROXY, INCONCLUSIVE)], "inconclusive", SIMULATED),
        ([(CONTROL, NOT_OBSERVED), (SIMULATED, SKIPPED)], "skipped", None),
    ],
)
def test_direct_beats_simulated_beats_proxy(observations: list[tuple[str, str]], verdict: str, evidence: str | None) -> None:
    decided = bug_verdict(BUGS["kornia-2791"], FIXED_RELEASE, [obs(role, seen) for role, seen in observations])
    assert (decided.verdict, decided.evidence) == (verdict, evidence)


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


# Whole messages, so that a lost fact or a stray separator cannot pass.
@pytest.mark.parametrize(
    ("status", "facts"),
    [
        (AFFECTED_RELEASE, "decided by version 0.7.1"),
        (
            replace(AFFECTED_RELEASE, disagreement="probe m:f says the fix is present, against version 0.7.1"),
            "decided by version 0.7.1; probe m:f says the fix is present, against version 0.7.1",
        ),
    ],
)
def test_stale_registry_message_states_what_decided(status: AffectedStatus, facts: str) -> None:
    assert stale_registry_message(KORNIA, status) == (
        f"NOT REPRODUCED kornia-2791: not observed on kornia 0.7.1, inside the registry's affected range {KORNIA.affected} "
        f"({facts}). If no test of it saw it (the verdict table), this release fixes it: update [kornia-2791] affected "
        "(and first_fixed) in fixtures/known_bugs/bugs.toml. If others did, this case cannot show it: raise Inconclusive there."
    )


def test_error_messages_name_the_bug_and_what_to_fix() -> None:
    assert not_installed_message(KORNIA, NOT_INSTALLED) == (
        "ERROR kornia-2791: this test ran to a conclusion but kornia not installed: it tested something else. "
        "A test of the harness's stand-in must call the `as_control` fixture."
    )
    assert control_fired_message(KORNIA, CONTROL) == (
        "CONTROL FIRED kornia-2791: this test decides nothing (control), yet its oracle saw the bug: the oracle, "
        "or the registry's symptom_device, is wrong. The bug's verdict is `error`."
    )


@pytest.mark.parametrize(
    ("status", "oracle_message", "reason"),
    [
        (AFFECTED_RELEASE, "pl unregistered\nsecond line", "kornia-2791 reproduced as known on kornia 0.7.1 (proxy): pl unregistered"),
        (AFFECTED_RELEASE, " \n", "kornia-2791 reproduced as known on kornia 0.7.1 (proxy): "),
        (
            replace(AFFECTED_RELEASE, disagreement="probe m:f says the fix is present, against version 0.7.1"),
            "\n pl unregistered",
            "kornia-2791 reproduced as known on kornia 0.7.1 [probe m:f says the fix is present, against version 0.7.1] "
            "(proxy): pl unregistered",
        ),
    ],
)
def test_reproduced_reason_is_the_oracles_first_line(status: AffectedStatus, oracle_message: str, reason: str) -> None:
    assert reproduced_reason(KORNIA, status, PROXY, oracle_message) == reason


def test_a_probe_that_raises_cannot_tell_and_its_error_stays_in_the_basis(monkeypatch) -> None:
    def hydra_fails() -> bool:
        raise RuntimeError("GlobalHydra is already initialized\nsecond line")

    monkeypatch.setattr(versions, "installed_version", lambda distribution: "1.0")  # ambiguous: the probe decides
    monkeypatch.setattr(versions, "run_probe", lambda reference: hydra_fails())
    status = versions.affected_status(BUGS["sam2-460"])
    assert (status.affected, status.version) == (None, "1.0")
    assert status.basis == (
        "version '1.0' cannot be placed, and no probe could tell; "
        "probe fixtures.known_bugs.probes:sam2_position_cache_is_warmed failed: RuntimeError: GlobalHydra is already initialized"
    )


# A release before a bug: not-affected, never fixed.

@pytest.mark.parametrize(
    ("affected", "observation", "predates", "verdict"),
    [
        (False, NOT_OBSERVED, True, NOT_AFFECTED),
        (False, NOT_OBSERVED, False, "fixed"),
        (False, OBSERVED, True, "regressed"),  # seen before the range: the range starts too late
        (False, SKIPPED, True, "skipped"),
        (False, INCONCLUSIVE, True, "inconclusive"),
    ],
)
def test_verdict_for_a_release_before_the_bug(affected: bool, observation: str, predates: bool, verdict: str) -> None:
    assert verdict_for(affected, observation, predates) == verdict


def with_range(affected: str) -> Bug:
    """kornia-2867 with another affected range (its other fields as registered)."""
    return replace(BUGS["kornia-2867"], affected=SpecifierSet(affected))


STRICTLY_AFTER_0_8_1 = with_range(">0.8.1,<0.9.0")
FROM_0_7_2RC2 = with_range(">=0.7.2rc2,<0.8.2")


@pytest.mark.parametrize(
    ("bug", "version", "predates"),
    [
        (BUGS["kornia-2867"], "0.7.1", True),
        (BUGS["kornia-2867"], "0.7.2", False),
        (BUGS["kornia-2867"], "0.8.2", False),  # after the range: fixed, not "before"
        (BUGS["kornia-3028"], "0.7.2", True),
        (BUGS["kornia-2791"], "0.6.9", True),
        (BUGS["kornia-2837"], "0.7.1", True),  # an exact version (==0.7.2.dev0): below it is before
        (BUGS["kornia-2837"], "0.7.2", False),
        (BUGS["sam2-460"], "0.1", False),  # a range open below has no "before"
        (BUGS["kornia-2867"], "not-a-version", False),
        (BUGS["kornia-2867"], "0.7.1a0+git1eba9b3", False),  # a source build: its commit decides
        # A strict lower bound leaves out its own version and that version's post-releases.
        (STRICTLY_AFTER_0_8_1, "0.8.1", True),
        (STRICTLY_AFTER_0_8_1, "0.8.1.post1", True),
        (STRICTLY_AFTER_0_8_1, "0.8.2", False),
        # The first affected release's candidate carries the bug; an earlier release's does not.
        (BUGS["kornia-2867"], "0.7.2rc1", False),
        (BUGS["kornia-2867"], "0.7.1rc1", True),
        (STRICTLY_AFTER_0_8_1, "0.8.1rc1", True),
        (AMBIGUOUS_RC1, "0.7.2rc2", False),  # an ambiguous candidate moves no other
        # A range naming a candidate places that release's candidates as themselves.
        (FROM_0_7_2RC2, "0.7.2rc1", True),
        (FROM_0_7_2RC2, "0.7.2rc3", False),
        (with_range(">=0.7.0,<0.7.2rc2"), "0.7.2rc1", False),  # read as itself, yet inside the lower bound
        # An exact, compatible or arbitrary-equality version, a wildcard included: below it is before.
        (with_range("==0.7.*"), "0.6.9", True),
        (with_range("==0.7.*"), "0.7.5", False),
        (with_range("~=0.7.2"), "0.7.1", True),
        (with_range("===0.7.2"), "0.7.1", True),
        (with_range("==0.7.2"), "0.7.2", False),
    ],
)
def test_what_predates_the_affected_range(bug: Bug, version: str, predates: bool) -> None:
    assert version_predates(bug, version) is predates


def test_a_release_before_the_range_is_placed_as_predating_with_the_range_named() -> None:
    status = place_release(BUGS["kornia-2867"], "0.7.1", None)
    assert (status.affected, status.predates) == (False, True)
    assert status.basis == "version 0.7.1, below the affected range <0.8.2,>=0.7.2"
    assert place_release(BUGS["kornia-2867"], "0.8.2", None).predates is False


def test_a_probe_disagreeing_on_a_release_before_the_range_is_stated() -> None:
    """A probe that finds the fix absent where the version says "unaffected": before the range, too,
    the version decides and the disagreement is kept for the verdict to state."""
    status = place_release(replace(BUGS["kornia-2867"], probe="m:probe"), "0.7.1", False)
    assert (status.affected, status.predates) == (False, True)
    assert status.disagreement == "probe m:probe says the fix is absent, against version 0.7.1"


BEFORE_2867 = place_release(BUGS["kornia-2867"], "0.7.1", None)
ABSENT = "kornia 0.7.1 has no kornia.augmentation.RandomJPEG (first shipped in 0.7.2)"


@pytest.mark.parametrize(
    ("observations", "verdict", "observation"),
    [
        ([Observation("m.py::t", SIMULATED, NOT_OBSERVED)], NOT_AFFECTED, NOT_OBSERVED),
        ([Observation("suites/k/test_m.py", DIRECT, SKIPPED, ABSENT)], NOT_AFFECTED, SKIPPED),
        # Skipped for another reason (no GPU): nothing says the code is absent, so nothing decided.
        ([Observation("m.py::t", DIRECT, SKIPPED, "cuda:1 requested, 0 CUDA devices visible")], SKIPPED, SKIPPED),
        ([Observation("m.py::t", SIMULATED, OBSERVED, "seen")], "regressed", OBSERVED),
    ],
)
def test_bug_verdict_before_the_range(observations: list[Observation], verdict: str, observation: str) -> None:
    decided = bug_verdict(BUGS["kornia-2867"], BEFORE_2867, observations)
    assert (decided.verdict, decided.observation) == (verdict, observation)
    if verdict == NOT_AFFECTED:
        assert decided.detail.endswith(BEFORE_2867.basis)


@pytest.mark.parametrize(
    ("bug", "version", "verdict"),
    [
        (BUGS["kornia-2867"], "0.7.2rc1", "reproduced"),
        (BUGS["kornia-2867"], "0.8.2rc1", "regressed"),
        (AMBIGUOUS_RC1, "0.7.2rc2", "reproduced"),
        (AMBIGUOUS_RC1, "0.7.2rc1", "unplaced"),
    ],
)
def test_a_sighting_on_a_candidate_is_judged_as_on_its_release(bug: Bug, version: str, verdict: str) -> None:
    """The symptom on the first affected release's candidate is the bug as known, not a regression
    before the range (whichever other candidate the registry calls ambiguous); on the first fixed
    release's candidate it is a regression of the fix."""
    status = place_release(bug, version, None)
    decided = bug_verdict(bug, status, [Observation("m.py::t", SIMULATED, OBSERVED, "seen")])
    assert decided.verdict == verdict


def test_the_absent_api_skip_of_a_release_inside_the_range_decides_nothing() -> None:
    inside = place_release(BUGS["kornia-2867"], "0.7.2", None)
    decided = bug_verdict(BUGS["kornia-2867"], inside, [Observation("suites/k/test_m.py", DIRECT, SKIPPED, ABSENT)])
    assert (decided.verdict, decided.detail) == (SKIPPED, ABSENT)


def test_a_stopped_session_is_an_error_naming_what_stopped_it() -> None:
    stopped = stopped_verdict(BUGS["kornia-2791"], "1 error(s) during collection: suites/x/test_y.py: ImportError", ["suites/x/test_y.py"])
    assert (stopped.verdict, stopped.tests, stopped.observation) == (ERROR, ("suites/x/test_y.py",), ERROR)
    assert stopped.detail == "the session stopped before this bug's tests all ran: 1 error(s) during collection: suites/x/test_y.py: ImportError"


# A runner with GPUs, too few for some direct tests: what stayed undecided is said.

def test_a_verdict_decided_below_direct_names_the_direct_tests_too_few_gpus_skipped() -> None:
    decided = bug_verdict(
        BUGS["kornia-2791"], AFFECTED_RELEASE,
        [Observation("m.py::proxy", PROXY, OBSERVED, "pl is plain"),
         Observation("m.py::t[cuda:1]", DIRECT, SKIPPED, "cuda:1 requested, 1 CUDA device visible"),
         Observation("m.py::u[cuda:1]", DIRECT, SKIPPED, "cuda:1 requested, 1 CUDA device visible")],
    )
    assert decided.verdict == "reproduced" and decided.evidence == PROXY
    assert decided.detail.endswith("undecided on this machine's GPUs: 2 direct test(s) skipped (cuda:1 requested, 1 CUDA device visible)")


@pytest.mark.parametrize("reason", ["cuda:0 requested, 0 CUDA devices visible", "pinning needs a CUDA device"])
def test_a_cpu_machine_or_another_skip_adds_no_gpu_note(reason: str) -> None:
    decided = bug_verdict(
        BUGS["kornia-2791"], AFFECTED_RELEASE,
        [Observation("m.py::proxy", PROXY, OBSERVED, "pl is plain"), Observation("m.py::t", DIRECT, SKIPPED, reason)],
    )
    assert "undecided on this machine" not in decided.detail


# Every precedence rule held from both sides. The expected order is stated here on its own (the
# Rule 4 of docs/reference/verdicts.md: a decision before "cannot tell" before "not run"; within each, the stronger
# evidence first; within a decision at one strength, seen before not seen), so a swapped table
# fails; the pairs come from PRECEDENCE itself, so a new row cannot be left out.

STRENGTH = (DIRECT, SIMULATED, PROXY)
TIERS = ((OBSERVED, NOT_OBSERVED), (INCONCLUSIVE,), (SKIPPED,))


def rule_rank(row: tuple[str, str]) -> tuple[int, int, int]:
    observation, role = row
    tier = next(index for index, members in enumerate(TIERS) if observation in members)
    return tier, STRENGTH.index(role), TIERS[tier].index(observation)


def test_the_precedence_table_is_in_the_rules_order() -> None:
    assert list(PRECEDENCE) == sorted(PRECEDENCE, key=rule_rank)


@pytest.mark.parametrize(("first", "second"), list(zip(PRECEDENCE, PRECEDENCE[1:])), ids=lambda row: "-".join(row))
def test_each_adjacent_pair_of_rules_decides_in_the_rules_order(first: tuple[str, str], second: tuple[str, str]) -> None:
    """One test matching each of two adjacent rows: the row the rules rank first decides; a table
    with the two swapped decides the other way."""
    tests = [Observation("m.py::second", second[1], second[0]), Observation("m.py::first", first[1], first[0])]
    expected = min((first, second), key=rule_rank)
    observation, role, deciding = decisive_observation(tests)
    assert (observation, role) == expected
    assert [o.nodeid for o in deciding] == ["m.py::first" if expected == first else "m.py::second"]


def test_mixed_simulated_evidence_is_a_sighting_on_either_side_of_the_range() -> None:
    mixed = [Observation("m.py::seen", SIMULATED, OBSERVED, "mismatch"), Observation("m.py::clean", SIMULATED, NOT_OBSERVED)]
    assert bug_verdict(BUGS["kornia-2791"], AFFECTED_RELEASE, mixed).verdict == "reproduced"
    assert bug_verdict(BUGS["kornia-2791"], FIXED_RELEASE, mixed).verdict == "regressed"


def test_a_clean_run_on_an_unplaced_build_records_not_observed_which_bisect_reads_as_good() -> None:
    """Bisect judges a commit by the observation, since its dev version gives no verdict."""
    from reports.bisect.answers import step_answer

    decided = bug_verdict(
        BUGS["kornia-2867"], place_release(BUGS["kornia-2867"], "0.7.2.dev0", None), [Observation("m.py::t", SIMULATED, NOT_OBSERVED)]
    )
    assert (decided.verdict, decided.observation) == (INCONCLUSIVE, NOT_OBSERVED)
    record = {"verdict": decided.verdict, "observation": decided.observation, "detail": decided.detail}
    answer = step_answer(record, "deterministic", fixed=False)
    assert answer == step_answer({**record, "verdict": "fixed"}, "deterministic", fixed=False)  # the verdict plays no part
    assert answer.bug_present is False


# --- a race hunted on a GPU without a sighting: the verdict says how likely a miss was ---

HUNT_9606 = "suites/torchvision_9606_decode_freed_memory/test_decode_after_free.py::test_decode_after_caller_freed_memory"
RECORD_9606 = (  # two seeds: two sets of inputs
    Trial("torchvision-9606", HUNT_9606, "NVIDIA H200", "0.26.0", 5, 1, 1, "s", 5),
    Trial("torchvision-9606", HUNT_9606, "NVIDIA H200", "0.26.0", 8, 1, 2, "s", 8),
)
AFFECTED_0_26 = AffectedStatus(True, "0.26.0", "version 0.26.0")


def clean_hunt(gpu: str | None, attempts: int) -> Observation:
    return Observation(f"{HUNT_9606}[cuda:0]", DIRECT, NOT_OBSERVED, f"{attempts} attempts", Hunt(HUNT_9606, gpu, attempts))


def test_a_clean_race_hunt_states_the_chance_it_missed() -> None:
    verdict = bug_verdict(BUGS["torchvision-9606"], AFFECTED_0_26, [clean_hunt("NVIDIA H200", 3)], RECORD_9606)
    assert verdict.verdict == "not-reproduced"
    assert verdict.miss is not None and verdict.miss.chance == pytest.approx((1 - rate_at_least(2, 13)) ** 3)
    assert verdict.detail == (
        "3 attempts, none saw it; if it fires as often as recorded (NVIDIA H200: 2 in 13, at least 2.8%: at 95% confidence), "
        "a miss had a chance of at most 92%"
    )


def test_a_clean_race_hunt_on_a_gpu_the_record_never_saw_cannot_bound_its_miss() -> None:
    verdict = bug_verdict(BUGS["torchvision-9606"], AFFECTED_0_26, [clean_hunt("NVIDIA A100", 3)], RECORD_9606)
    assert verdict.miss.chance is None
    assert "no sighting recorded on NVIDIA A100: the chance of a miss cannot be bounded" in verdict.detail


def test_a_fixed_releases_clean_attempts_never_count_toward_the_rate() -> None:
    """8587 on 0.26.0 (fixed) ran hundreds of clean attempts: they say nothing of how often 8587 fires."""
    case = "suites/torchvision_8587_encode_jpeg/test_list_input.py::test_list_encode_decodes_each_frame_to_its_source"
    record = (
        Trial("torchvision-8587", case, "NVIDIA H200", "0.21.0", 10, 5, 1, "s", 2),
        Trial("torchvision-8587", case, "NVIDIA H200", "0.26.0", 900, 0, 1, "s"),
    )
    hunt = Observation(f"{case}[cuda:0]", DIRECT, NOT_OBSERVED, "", Hunt(case, "NVIDIA H200", 7))
    verdict = bug_verdict(BUGS["torchvision-8587"], AffectedStatus(False, "0.26.0", "version 0.26.0"), [hunt], record)
    assert verdict.verdict == "fixed"
    assert "(NVIDIA H200: 5 in 10, at least 22%: at 95% confidence)" in verdict.detail


@pytest.mark.parametrize(
    ("bug_id", "observation", "role"),
    [("kornia-2791", NOT_OBSERVED, DIRECT), ("torchvision-9606", OBSERVED, DIRECT), ("torchvision-9606", NOT_OBSERVED, CONTROL)],
)
def test_only_a_clean_direct_race_hunt_has_odds(bug_id: str, observation: str, role: str) -> None:
    """A deterministic bug's clean run, a sighting and a control's run state no miss chance."""
    seen = Observation(f"{HUNT_9606}[cuda:0]", role, observation, "5 attempts", Hunt(HUNT_9606, "NVIDIA H200", 5))
    verdict = bug_verdict(BUGS[bug_id], AFFECTED_0_26, [seen], RECORD_9606)
    assert verdict.miss is None and "a miss" not in verdict.detail



@pytest.mark.parametrize(
    ("verdicts", "decided"),
    [
        (["not-affected"], True),
        (["not-affected", "skipped"], True),
        (["skipped", "skipped"], False),  # nothing decided: "no tests ran" stands
        (["not-affected", "unplaced"], False),
        (["not-affected", "regressed"], False),
        (["error"], False),
        ([], False),
    ],
)
def test_a_session_no_test_ran_in_passes_only_on_verdicts(verdicts: list[str], decided: bool) -> None:
    assert decided_by_skips(BugVerdict(f"b-{i}", v, None, (), "", v) for i, v in enumerate(verdicts)) is decided
