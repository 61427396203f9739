"""Release-scan arithmetic (reports/scan/ranges.py): ordering, windows, disagreements, by table."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from reports.scan.page import scan_document, scan_html
from reports.scan.ranges import (
    Disagreement,
    ReleaseError,
    Window,
    disagreement,
    failed_runs,
    measured_windows,
    observation,
    outcome_line,
    release_order,
    scan_bug,
    unsettled,
)
from reports.scan.run import AGREE, BAD_INPUT, DISAGREE, UNDECIDED, scan_status, summary_lines


@pytest.mark.parametrize(
    ("given", "ordered"),
    [
        (["0.7.2", "0.7.10", "0.7.1"], ["0.7.1", "0.7.2", "0.7.10"]),  # numeric, not text, order
        (["0.7.2", "0.7.2rc1", "0.7.2.dev0", "0.7.2a1", "0.7.1"], ["0.7.1", "0.7.2.dev0", "0.7.2a1", "0.7.2rc1", "0.7.2"]),
        (["0.7.2.post1", "0.7.2", "0.7.3.dev1"], ["0.7.2", "0.7.2.post1", "0.7.3.dev1"]),
        (["1.0", "1.0.0", "0.9"], ["0.9", "1.0"]),  # the same release written twice is scanned once
        (["0.7.2-dev"], ["0.7.2-dev"]),  # kornia's checkout spelling: valid PEP 440, kept as written
    ],
)
def test_release_order_is_pep440(given: list[str], ordered: list[str]) -> None:
    assert release_order(given) == ordered


def test_a_release_that_is_no_version_is_refused() -> None:
    with pytest.raises(ReleaseError, match="'latest' is not a PEP 440 version"):
        release_order(["0.7.1", "latest"])


@pytest.mark.parametrize(
    ("verdict", "seen"),
    [("reproduced", True), ("regressed", True), ("fixed", False), ("not-reproduced", False),
     ("unplaced", None),  # seen, on a build nothing placed: it says nothing of the range
     ("inconclusive", None), ("skipped", None), ("error", None), ("some-future-verdict", None), (None, None)],
)
def test_observation_reads_any_verdict(verdict: str | None, seen: bool | None) -> None:
    assert observation(verdict) is seen


@pytest.mark.parametrize(("verdict", "seen"), [("not-reproduced", None), ("fixed", None), ("not-affected", None), ("reproduced", True)])
def test_a_race_not_seen_within_its_budget_decides_nothing(verdict: str, seen: bool | None) -> None:
    assert observation(verdict, "race") is seen


R, F, N, S, E = "reproduced", "fixed", "not-reproduced", "skipped", "error"


@pytest.mark.parametrize(
    ("verdicts", "windows"),
    [
        ({"1": R, "2": R, "3": F, "4": F}, [Window("1", "3")]),
        ({"1": F, "2": R, "3": F}, [Window("2", "3")]),
        ({"1": F, "2": F}, []),
        ({"1": R, "2": R}, [Window("1", None)]),  # the newest scanned release still has it
        ({"1": R, "2": F, "3": "regressed", "4": F}, [Window("1", "2"), Window("3", "4")]),
        ({"1": R, "2": S, "3": E, "4": F}, [Window("1", "4")]),  # undecided releases move no edge
        ({"1": S, "2": R, "3": "inconclusive"}, [Window("2", None)]),
        ({"1": S, "2": E}, []),
    ],
)
def test_measured_windows(verdicts: dict[str, str], windows: list[Window]) -> None:
    assert measured_windows(verdicts) == windows


@pytest.mark.parametrize(
    ("verdict", "registry_affected", "kind", "reason"),
    [
        ("reproduced", True, "deterministic", None),
        ("fixed", False, "deterministic", None),
        ("regressed", False, "deterministic", "seen outside the registry's affected range"),
        ("reproduced", False, "deterministic", "seen outside the registry's affected range"),
        ("not-reproduced", True, "deterministic", "not seen inside the registry's affected range"),
        ("fixed", True, "deterministic", "not seen inside the registry's affected range"),
        ("not-reproduced", True, "race", None),  # a race that did not trigger proves nothing
        ("skipped", True, "deterministic", None),
        ("error", False, "deterministic", None),
        (None, True, "deterministic", None),
        # A release no version places: its run's own placing, which the verdict states, is judged.
        ("regressed", None, "deterministic", "seen where its run placed it outside the affected range"),
        ("not-reproduced", None, "deterministic", "not seen where its run placed it inside the affected range"),
        ("not-reproduced", None, "race", None),
        ("reproduced", None, "deterministic", None),
        ("fixed", None, "deterministic", None),
    ],
)
def test_disagreement(verdict: str | None, registry_affected: bool | None, kind: str, reason: str | None) -> None:
    found = disagreement("0.7.1", verdict, registry_affected, kind)
    assert found == (Disagreement("0.7.1", verdict, registry_affected, reason) if reason else None)  # scan.json writes every field


def kornia_2791(affected: str, verdicts: dict[str, str]):
    return scan_bug(
        bug_id="kornia-2791", title="pl", affected=SpecifierSet(affected), first_fixed="0.7.2", kind="deterministic",
        verdicts=verdicts,
    )


MEASURED = {"0.8.1": F, "0.6.10": R, "0.7.2": F, "0.7.0": R, "0.7.1": R}  # given out of order on purpose


def test_a_row_that_matches_the_registry() -> None:
    bug = kornia_2791(">=0.6.10,<0.7.2", MEASURED)
    assert list(bug.verdicts) == ["0.6.10", "0.7.0", "0.7.1", "0.7.2", "0.8.1"]
    assert (bug.first_affected, bug.first_fixed) == ("0.6.10", "0.7.2")
    assert bug.registry_affected == {"0.6.10": True, "0.7.0": True, "0.7.1": True, "0.7.2": False, "0.8.1": False}
    assert bug.disagreements == ()


def test_a_narrowed_registry_disagrees_on_the_releases_it_left_out() -> None:
    bug = kornia_2791(">=0.7.1,<0.7.2", {**MEASURED, "0.6.10": "regressed", "0.7.0": "regressed"})
    assert [(d.release, d.verdict) for d in bug.disagreements] == [("0.6.10", "regressed"), ("0.7.0", "regressed")]
    assert (bug.first_affected, bug.first_fixed) == ("0.6.10", "0.7.2")


def test_a_dev_build_is_placed_by_no_version_so_its_verdict_never_disagrees() -> None:
    """Its verdict was placed by its commit (or is `unplaced`): the range cannot judge it."""
    bug = scan_bug(
        bug_id="kornia-2837", title="mean", affected=SpecifierSet(">=0.7.2,<0.8.2"), first_fixed="0.8.2",
        kind="deterministic", verdicts={"0.7.2": R, "0.7.2.dev0": R, "0.7.1": "not-affected", "0.8.2": F},
    )
    assert bug.registry_affected == {"0.7.1": False, "0.7.2.dev0": None, "0.7.2": True, "0.8.2": False}
    assert (bug.first_affected, bug.first_fixed) == ("0.7.2.dev0", "0.8.2")
    assert bug.disagreements == () and bug.unsettled == ()


def test_an_unplaced_sighting_neither_disagrees_nor_opens_a_window() -> None:
    bug = scan_bug(
        bug_id="torchvision-8587", title="noise", affected=SpecifierSet(">=0.19.0,<0.22.0"), first_fixed="0.22.0",
        kind="deterministic", verdicts={"0.21.0": R, "0.22.0a0+7a13ad0": "unplaced", "0.22.0": F},
    )
    assert bug.disagreements == () and bug.windows == (Window("0.21.0", "0.22.0"),)
    assert [(item.release, item.reason) for item in bug.undecided] == [("0.22.0a0+7a13ad0", "seen on a build nothing could place")]


def test_an_ambiguous_version_placed_by_the_probe_never_disagrees() -> None:
    """sam2 from git says 1.0 on both sides of its fix: the harness's probe placed it."""
    bug = scan_bug(
        bug_id="sam2-460", title="cache", affected=SpecifierSet("<1.1.0"), first_fixed="1.1.0", kind="deterministic",
        verdicts={"0.4.1": R, "1.0": F, "1.1.0": F}, ambiguous=SpecifierSet("==1.0"),
    )
    assert bug.registry_affected["1.0"] is None and bug.disagreements == () and bug.unsettled == ()


def test_a_regressed_verdict_on_a_release_no_version_places_still_disagrees() -> None:
    """The run placed sam2 1.0 by its probe (not affected) and saw the bug: its `regressed` is the
    disagreement, never a failed run that no verdict explains."""
    bug = scan_bug(
        bug_id="sam2-460", title="cache", affected=SpecifierSet("<1.1.0"), first_fixed="1.1.0", kind="deterministic",
        verdicts={"0.4.1": R, "1.0": "regressed", "1.1.0": F}, ambiguous=SpecifierSet("==1.0"),
    )
    assert [(d.release, d.verdict, d.registry_affected) for d in bug.disagreements] == [("1.0", "regressed", None)]
    assert bug.disagreements[0].reason == "seen where its run placed it outside the affected range"
    assert failed_runs([bug], {"0.4.1": 0, "1.0": 1, "1.1.0": 0}) == [] and scan_status([bug], None) == DISAGREE


@pytest.mark.parametrize(("kind", "disagrees"), [("deterministic", True), ("race", False)])
def test_not_reproduced_where_the_run_placed_the_release_affected(kind: str, disagrees: bool) -> None:
    """A deterministic bug not seen where the probe placed sam2 1.0 affected fails its run: a
    disagreement, never an unexplained FAILED RUN; a race that did not trigger proves nothing."""
    bug = scan_bug(
        bug_id="sam2-460", title="cache", affected=SpecifierSet("<1.1.0"), first_fixed="1.1.0", kind=kind,
        verdicts={"1.0": "not-reproduced"}, ambiguous=SpecifierSet("==1.0"),
    )
    assert [(d.release, d.reason) for d in bug.disagreements] == (
        [("1.0", "not seen where its run placed it inside the affected range")] if disagrees else []
    )
    assert failed_runs([bug], {"1.0": 1}) == ([] if disagrees else ["1.0"])


def test_an_unplaced_sighting_explains_its_failed_run_and_leaves_the_scan_undecided() -> None:
    bug = scan_bug(
        bug_id="kornia-2837", title="mean", affected=SpecifierSet(">=0.7.2,<0.8.2"), first_fixed="0.8.2",
        kind="deterministic", verdicts={"0.7.1": "not-affected", "0.7.2.dev0": "unplaced"},
    )
    failed = failed_runs([bug], {"0.7.1": 0, "0.7.2.dev0": 1})
    assert failed == [] and scan_status([bug], None, failed) == UNDECIDED


def test_a_race_not_seen_moves_no_edge() -> None:
    """Inside the range or after it: a clean release of a race is undecided, so the scan measures
    no first fixed (a `fixed` there would only repeat the registry)."""
    bug = scan_bug(
        bug_id="torchvision-9606", title="race", affected=SpecifierSet(">=0.19.0,<0.22.0"), first_fixed="0.22.0", kind="race",
        verdicts={"0.19.0": R, "0.20.0": N, "0.21.0": R, "0.22.0": F},
    )
    assert bug.windows == (Window("0.19.0", None),) and (bug.first_affected, bug.first_fixed) == ("0.19.0", None)
    assert [item.release for item in bug.undecided] == ["0.20.0", "0.22.0"] and bug.disagreements == ()


def test_a_race_not_seen_outside_the_range_confirms_no_edge() -> None:
    bug = scan_bug(
        bug_id="torchvision-9606", title="race", affected=SpecifierSet(">=0.19.0,<0.22.0"), first_fixed="0.22.0", kind="race",
        verdicts={"0.18.0": "not-affected", "0.21.0": R, "0.22.0": F},
    )
    assert (bug.first_affected, bug.first_fixed) == ("0.21.0", None) and bug.disagreements == ()
    assert [(item.release, item.reason) for item in bug.undecided] == [
        ("0.18.0", "a race that did not trigger within its budget proves nothing"),
        ("0.22.0", "a race that did not trigger within its budget proves nothing"),
    ]
    assert scan_status([bug], None) == UNDECIDED


@pytest.mark.parametrize(
    ("verdicts", "words"),
    [
        ({"0.21.0": R, "0.22.0": F, "0.23.0": F}, "0.21.0 through 0.21.0 (the releases after it decided nothing)"),
        ({"0.20.0": R, "0.21.0": R, "0.22.0": F}, "0.20.0 through 0.21.0 (the releases after it decided nothing)"),
        ({"0.21.0": R, "0.22.0": R}, "0.21.0 up to the newest scanned"),
    ],
)
def test_a_window_the_undecided_releases_end_is_said_so(verdicts: dict[str, str], words: str) -> None:
    """A race not seen after its last sighting leaves the window open: it was not seen up to the
    newest scanned (the page said so, though the newest releases decided nothing)."""
    bug = scan_bug(
        bug_id="torchvision-9606", title="race", affected=SpecifierSet(">=0.19.0"), first_fixed="no release yet", kind="race", verdicts=verdicts
    )
    runs = [{"release": release} for release in bug.verdicts]
    assert f"seen from {words} (first fixed excluded)" in scan_html(scan_document("torchvision", "bugs.toml", runs, [bug], None, 3))
    again = replace(bug, windows=(Window("0.10.0", "0.11.0", "0.10.0"), *bug.windows))  # a second window: the summary's words
    assert f", seen again from {words}; " in summary_lines(Path("scan"), [again])[0]


def test_the_page_frames_exactly_the_disagreeing_releases() -> None:
    bug = kornia_2791(">=0.7.1,<0.7.2", {**MEASURED, "0.6.10": "regressed", "0.7.0": "<b>new-verdict</b>"})
    runs = [{"release": release} for release in bug.verdicts]
    page = scan_html(scan_document("kornia", "bugs.toml", runs, [bug], None, 1))
    framed = re.findall(r'class="scan-tick scan-disagrees" data-release="([^"]+)"', page)
    assert framed == ["0.6.10"]  # an unknown verdict decides nothing, so it cannot disagree
    assert "&lt;b&gt;new-verdict&lt;/b&gt;" in page and "<b>new-verdict" not in page
    assert page.count('class="scan-band-affected"') == 1  # only 0.7.1 lies in the narrowed range
    assert 'href="kornia-0.7.1/report.html"' in page


@pytest.mark.parametrize(
    ("verdict", "kind", "reason"),
    [
        ("reproduced", "deterministic", None),
        ("fixed", "deterministic", None),
        ("fixed", "race", "a race that did not trigger within its budget proves nothing"),
        ("regressed", "deterministic", None),  # a disagreement, decided
        ("error", "deterministic", "its run errored"),
        ("error", "race", "its run errored"),
        ("skipped", "deterministic", "the bug was not decided (skipped)"),
        ("inconclusive", "deterministic", "the bug was not decided (inconclusive)"),
        (None, "deterministic", "the bug was not decided (no verdict)"),
        ("not-reproduced", "race", "a race that did not trigger within its budget proves nothing"),
        ("unplaced", "deterministic", "seen on a build nothing could place"),
    ],
)
def test_unsettled(verdict: str | None, kind: str, reason: str | None) -> None:
    found = unsettled("0.7.1", verdict, kind)
    assert (found.reason if found else None) == reason


@pytest.mark.parametrize(
    ("verdicts", "errors", "undecided", "status", "outcome"),
    [
        (MEASURED, [], [], AGREE, "agrees with the registry: every release decided"),
        ({**MEASURED, "0.7.0": E, "0.7.1": E}, ["0.7.0", "0.7.1"], [], DISAGREE,
         "does not confirm the registry: 2 errored release(s)"),
        ({release: E for release in MEASURED}, ["0.6.10", "0.7.0", "0.7.1", "0.7.2", "0.8.1"], [], DISAGREE,  # all errored
         "does not confirm the registry: 5 errored release(s)"),
        ({**MEASURED, "0.7.1": S, "0.8.1": "inconclusive"}, [], ["0.7.1", "0.8.1"], UNDECIDED,
         "does not confirm the registry: 2 undecided release(s)"),
        ({**MEASURED, "0.6.10": N, "0.7.0": E, "0.7.1": S}, ["0.7.0"], ["0.7.1"], DISAGREE,
         "does not confirm the registry: 1 disagreement(s), 1 errored release(s), 1 undecided release(s)"),
    ],
)
def test_only_decided_agreeing_releases_confirm_the_registry(
    verdicts: dict[str, str], errors: list[str], undecided: list[str], status: int, outcome: str
) -> None:
    bug = kornia_2791(">=0.6.10,<0.7.2", verdicts)
    assert ([item.release for item in bug.errors], [item.release for item in bug.undecided]) == (errors, undecided)
    assert (scan_status([bug], None), outcome_line([bug])) == (status, outcome)
    assert scan_status([bug], "kornia 0.8.1: install failed") == BAD_INPUT


def test_the_page_marks_errored_and_undecided_releases() -> None:
    bug = kornia_2791(">=0.6.10,<0.7.2", {**MEASURED, "0.6.10": N, "0.7.0": E, "0.7.1": S})
    runs = [{"release": release} for release in bug.verdicts]
    document = scan_document("kornia", "bugs.toml", runs, [bug], None, scan_status([bug], None))
    assert (document["bugs"][0]["errors"], document["bugs"][0]["undecided"]) == (
        [{"release": "0.7.0", "verdict": E, "reason": "its run errored"}],
        [{"release": "0.7.1", "verdict": S, "reason": "the bug was not decided (skipped)"}],
    )
    page = scan_html(document)
    framed = re.findall(r'class="scan-tick ([a-z-]+)" data-release="([^"]+)"', page)
    assert framed == [("scan-disagrees", "0.6.10"), ("scan-errored", "0.7.0"), ("scan-undecided", "0.7.1")]
    assert "1 disagreement(s), 1 errored, 1 undecided" in page
    assert "Scan does not confirm the registry" in page


def test_the_printed_summary_names_errored_and_undecided_releases(tmp_path) -> None:
    bug = kornia_2791(">=0.6.10,<0.7.2", {**MEASURED, "0.7.0": E, "0.7.1": S})
    lines = summary_lines(tmp_path, [bug])
    assert lines[1:] == [
        "  ERROR 0.7.0: its run errored",
        "  UNDECIDED 0.7.1: the bug was not decided (skipped)",
        "scan does not confirm the registry: 1 errored release(s), 1 undecided release(s)",
        f"scan: {tmp_path / 'scan.json'}, {tmp_path / 'scan.html'}",
    ]


def test_a_stopped_scan_confirms_nothing_even_when_what_ran_agrees(tmp_path) -> None:
    """An install that failed at the first release leaves no row: the outcome must not read as agreement."""
    bug = kornia_2791(">=0.6.10,<0.7.2", {})
    stopped = "kornia 0.7.1: install failed: error: connection refused"
    assert summary_lines(tmp_path, [bug], stopped)[-2] == f"scan stopped before every release was scanned ({stopped}): confirms nothing"
    assert scan_status([bug], stopped) == BAD_INPUT
    page = scan_html(scan_document("kornia", "bugs.toml", [], [bug], stopped, BAD_INPUT))
    assert "no release scanned" in page and "agrees with the registry" not in page


def test_a_failed_run_no_verdict_explains_fails_the_scan(tmp_path) -> None:
    """--every-suite --strict-sweeps: an untriaged sweep finding fails pytest while every bug's
    verdict agrees; that release is no agreement. A failure a disagreement explains counts once."""
    bug = kornia_2791(">=0.6.10,<0.7.2", {**MEASURED, "0.6.10": N})
    exits = {release: 0 for release in MEASURED} | {"0.6.10": 1, "0.8.1": 1}
    failed = failed_runs([bug], exits)
    assert failed == ["0.8.1"]  # 0.6.10's failure is its disagreement
    assert scan_status([bug], None, failed) == DISAGREE
    assert scan_status([kornia_2791(">=0.6.10,<0.7.2", MEASURED)], None, ["0.8.1"]) == DISAGREE
    lines = summary_lines(tmp_path, [bug], None, failed)
    assert f"FAILED RUN 0.8.1: pytest failed where no scanned bug's verdict explains it: {tmp_path}/*-0.8.1/pytest.log" in lines
    assert lines[-2] == "scan does not confirm the registry: 1 disagreement(s), 1 failed run(s) no verdict explains"
    assert scan_document("kornia", "bugs.toml", [], [bug], None, DISAGREE, failed)["failed_runs"] == ["0.8.1"]


@pytest.mark.parametrize(("verdict", "seen"), [("not-affected", False), ("fixed", False), ("reproduced", True), ("skipped", None)])
def test_a_release_before_the_bug_is_a_decided_not_seen(verdict: str, seen: bool | None) -> None:
    assert observation(verdict) is seen


def test_not_affected_below_the_range_agrees_with_the_registry() -> None:
    bug = kornia_2791(">=0.7.2,<0.8.2", {"0.7.1": "not-affected", "0.7.2": R, "0.8.2": F})
    assert (bug.disagreements, bug.unsettled, outcome_line([bug])) == ((), (), "agrees with the registry: every release decided")


def test_the_summary_names_every_window_the_bug_was_seen_in(tmp_path) -> None:
    """A sighting before the range opens a window of its own: the summary's first window is not
    the whole story (nor its end a fix of the registered bug)."""
    bug = kornia_2791(">=0.7.2,<0.8.2", {"0.7.1": "regressed", "0.7.2rc1": "not-affected", "0.7.2": R, "0.8.2": F})
    assert summary_lines(tmp_path, [bug])[0].startswith(
        "kornia-2791: measured first affected 0.7.1, first fixed 0.7.2rc1, seen again from 0.7.2 up to 0.8.2; registry affected"
    )
