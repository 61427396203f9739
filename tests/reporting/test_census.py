"""`python -m reports census`: a package's own tests at each release, plainly and simulated, and
what fails only simulated grouped by cause. The pure parts by table; the command end to end on two
releases of a tiny planted package (its releases already in the cache, its tests in a git
repository made here), which takes four pytest sessions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from html import escape
from pathlib import Path

import pytest

from fixtures.sweeps.allowlist import DEFAULT_ALLOWLIST, load_allowlist, parse_allowlist
from reports.__main__ import main
from reports.census.causes import cause_of, error_line
from reports.census.findings import (
    CUDA_CASE,
    OWN_TESTS,
    SWEEP,
    Failure,
    Finding,
    Match,
    MatchesError,
    group_findings,
    load_matches,
    place_of_test,
    wider_than_seen,
)
from reports.census.junit import Outcome, compare, junit_id, node_id
from reports.census.page import census_document, census_markdown
from reports.census.releases import ReleaseRangeError, census_releases, parse_tests_at, tagged_releases
from reports.census.run import CensusSuite, export_tests, load_suite, read_census, sweep_failures, write_census
from reports.scan.run import ScanError, release_folder
from tests.conftest import REPO
from tests.helpers import warm_python

NATIVE = """Traceback (most recent call last):
  File "/tmp/census-tests-x/tests/augmentation/test_linear.py", line 12, in test_smoke
    out = aug(x)
  File "/cache/kornia-0.8.2/kornia/augmentation/base.py", line 200, in forward
    params = self.generate_parameters(shape)
  File "/cache/kornia-0.8.2/kornia/augmentation/random_generator/_2d/linear_illumination.py", line 115, in forward
    gradient = sign * gain_factor * gradient
  File "/work/main/simcuda/dispatch.py", line 40, in __torch_dispatch__
    raise error
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu! (size 16)
"""


# The pure parts ---------------------------------------------------------------------------------


def test_a_cause_is_the_innermost_frame_in_the_package_and_the_error_with_its_numbers_masked() -> None:
    where, error = cause_of(NATIVE, ("/cache/kornia-0.8.2",))
    assert where == "kornia/augmentation/random_generator/_2d/linear_illumination.py:forward"
    assert error == "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu! (size N)"


def test_a_failure_that_never_reached_the_package_is_placed_in_the_test() -> None:
    text = 'Traceback (most recent call last):\n  File "/x/tests/color/test_hsv.py", line 3, in test_a\n    assert 1 == 2\nAssertionError: 1 == 2\n'
    assert cause_of(text, ("/cache/kornia-0.8.2",)) == ("(test) color/test_hsv.py:test_a", "AssertionError: N == N")
    assert error_line("no traceback at all, 3 lines") == "no traceback at all, N lines"


def test_the_packages_own_test_helpers_and_installed_code_never_place_a_cause() -> None:
    """kornia 0.6's tests assert through kornia.testing, which calls torch's assert_close: the
    cause is the test's own line, not the helper inside the package nor torch."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/tmp/census-tests-x/test/augmentation/test_gen.py", line 9, in test_random_gen\n    assert_close(a, b)\n'
        '  File "/cache/kornia-0.6.10/kornia/testing/__init__.py", line 270, in assert_close\n    return _assert_close(a, b)\n'
        '  File "/venv/lib/python3.11/site-packages/torch/testing/_comparison.py", line 1689, in assert_close\n    raise error\n'
        "AssertionError: Tensor-likes are not close!\n"
    )
    place = cause_of(text, ("/cache/kornia-0.6.10",), ("/venv",), helpers=("kornia/testing/",))
    assert place == ("(test) augmentation/test_gen.py:test_random_gen", "AssertionError: Tensor-likes are not close!")
    assert cause_of(text, ("/cache/kornia-0.6.10",), ("/venv",)).where == "kornia/testing/__init__.py:assert_close"


def test_an_allocation_simcuda_failed_the_test_for_is_placed_at_its_caller() -> None:
    message = (
        "simcuda: 2 allocation(s) on a device the test never asked for: torch.tensor [4, 3] on cuda:0 at "
        "augmentation/planckian_jitter.py:80 in __init__; aten.mul [4] on cuda:0 at augmentation/planckian_jitter.py:91 in forward"
    )
    assert cause_of(message, ("/cache/kornia-0.7.1",)) == (
        "augmentation/planckian_jitter.py:__init__", "allocation on a device the test never asked for: torch.tensor on cuda:0"
    )


@pytest.mark.parametrize(
    ("node", "place"),
    [
        ("test/augmentation/test_augmentation.py::TestClahe::test_smoke[cpu-float32]", "augmentation/test_augmentation.py::TestClahe::test_smoke"),
        ("tests/augmentation/test_augmentation.py::TestClahe::test_smoke[cpu-float32]", "augmentation/test_augmentation.py::TestClahe::test_smoke"),
        ("tests/color/test_hsv.py::test_a", "color/test_hsv.py::test_a"),
    ],
)
def test_a_failure_in_the_tests_own_code_is_placed_by_its_test_in_every_release(node: str, place: str) -> None:
    assert place_of_test(node) == place


def test_releases_come_from_final_tags_and_the_commits_named_for_untagged_ones() -> None:
    tagged = tagged_releases(["v0.8.1", "0.8.2", "v0.8.2", "v0.9.0rc1", "nightly", "v0.8.3"])
    assert tagged == {"0.8.1": "v0.8.1", "0.8.2": "v0.8.2", "0.8.3": "v0.8.3"}
    named = parse_tests_at(["0.9.0=b4f5a78a1"])
    assert census_releases(["0.8.2..0.9.0"], tagged, named) == {"0.8.2": "v0.8.2", "0.8.3": "v0.8.3", "0.9.0": "b4f5a78a1"}
    assert census_releases(["0.8.3", "0.8.1"], tagged, {}) == {"0.8.1": "v0.8.1", "0.8.3": "v0.8.3"}


@pytest.mark.parametrize(
    ("arguments", "named", "message"),
    [
        (["0.8.1..0.9.0"], [], "0.9.0: no tag v0.9.0 or 0.9.0 in the repository; name the commit its tests come from: --tests-at 0.9.0=REF"),
        (["0.8.3..0.8.1"], [], "0.8.3..0.8.1: the first release is newer than the last"),
        (["0.8.x"], [], "release: '0.8.x' is not a release (PEP 440, e.g. 0.8.2)"),
        (["0.8.1"], ["0.9.0"], "--tests-at '0.9.0': give RELEASE=REF, e.g. 0.9.0=b4f5a78a1"),
    ],
)
def test_a_range_that_cannot_be_resolved_is_refused_in_one_line(arguments: list[str], named: list[str], message: str) -> None:
    with pytest.raises(ReleaseRangeError) as refused:
        census_releases(arguments, {"0.8.1": "v0.8.1", "0.8.3": "v0.8.3"}, parse_tests_at(named))
    assert str(refused.value) == message


def test_one_cause_at_several_releases_is_one_finding_from_its_first_to_its_last() -> None:
    where, error = "kornia/a.py:forward", "RuntimeError: Expected all tensors to be on the same device"
    failures = [
        Failure("0.8.3", OWN_TESTS, where, error, "tests/t.py::test_b"),
        Failure("0.8.2", OWN_TESTS, where, error, "tests/t.py::test_a"),
        Failure("0.8.2", CUDA_CASE, "kornia/b.py:f", "TypeError: x", "tests/t.py::test_c[cuda]"),
    ]
    matches = [Match(where, "RuntimeError: Expected all tensors", "upstream", "https://github.com/kornia/kornia/issues/4536", "the traceback's line")]
    first, second = group_findings(failures, ["0.8.1", "0.8.2", "0.8.3"], matches, {})
    assert (first.kind, first.releases, first.first, first.last) == (CUDA_CASE, ["0.8.2"], "0.8.2", "0.8.2")
    assert first.match["kind"] == "unmatched"
    assert (second.releases, second.tests) == (["0.8.2", "0.8.3"], {"0.8.2": ["tests/t.py::test_a"], "0.8.3": ["tests/t.py::test_b"]})
    assert second.match == {"kind": "upstream", "value": "https://github.com/kornia/kornia/issues/4536", "how": "the traceback's line"}


def test_a_match_for_one_test_leaves_other_tests_failing_at_the_same_place_unmatched() -> None:
    """A library frame that one test's own omission reaches is no licence for every failure there."""
    where, error = "kornia/geometry/transform/imgwarp.py:homography_warp", "TypeError: Patch and homography must be on the same device"
    match = Match(where, "TypeError: Patch", "not_a_bug", "the test leaves the module on the CPU", "its source", test="geometry/t.py::T::test_a")
    failures = [Failure("0.9.0", OWN_TESTS, where, error, "tests/geometry/t.py::T::test_a[cpu]")]
    (mine,) = group_findings(failures, ["0.9.0"], [match], {})
    (other,) = group_findings([Failure("0.9.0", OWN_TESTS, where, error, "tests/geometry/t.py::T::test_b[cpu]")], ["0.9.0"], [match], {})
    assert (mine.match["kind"], other.match["kind"]) == ("not_a_bug", "unmatched")


def test_a_sweep_finding_the_allow_list_charges_to_a_bug_belongs_to_that_bug() -> None:
    document = {"sweeps": [
        {"sweep": "device", "callable": "kornia.augmentation.RandomShear", "device": "simcuda:1", "result": "finding",
         "finding": "device-error (module moved)", "triaged": "the registered bug", "charged": "kornia-4415"},
        {"sweep": "device", "callable": "kornia.filters.canny", "device": "simcuda:1", "result": "clean"},
        {"sweep": "state", "callable": "kornia.enhance.Normalize", "device": "cpu", "result": "finding", "finding": "state-left-behind",
         "triaged": "re-cast on every call"},
    ]}
    charged, triaged = group_findings(sweep_failures("0.8.2", document), ["0.8.2"], [], {})
    assert (charged.kind, charged.where, charged.error) == (SWEEP, "device: kornia.augmentation.RandomShear", "device-error (module moved)")
    assert charged.match["kind"] == "bug" and charged.match["value"] == "kornia-4415"
    assert triaged.match == {"kind": "triaged", "value": "", "how": "the sweep allow-list: re-cast on every call"}


def test_a_charged_finding_that_comes_back_after_the_bugs_fix_is_a_finding_of_its_own() -> None:
    """The allow-list charges it to kornia-4536 inside that bug's range only: at 0.9.0 (the fix)
    the same finding is untriaged, and the strongest triage must not speak for it there."""
    row = {"sweep": "device", "callable": "kornia.augmentation.RandomLinearIllumination", "device": "simcuda:1", "result": "finding",
           "finding": "device-error (module moved)"}
    failures = [
        *sweep_failures("0.8.2", {"sweeps": [{**row, "triaged": "the registered bug", "charged": "kornia-4536"}]}),
        *sweep_failures("0.9.0", {"sweeps": [row]}),
    ]
    charged, back = group_findings(failures, ["0.8.2", "0.9.0"], [], {})
    assert (charged.releases, charged.match["kind"], charged.match["value"]) == (["0.8.2"], "bug", "kornia-4536")
    assert (back.releases, back.match["kind"]) == (["0.9.0"], "unmatched")


PLANCKIAN = {"sweep": "device", "callable": "kornia.augmentation.RandomPlanckianJitter", "device": "simcuda:1", "result": "finding",
             "finding": "device-error (module not moved)", "triaged": "the nn.Module contract"}


@pytest.mark.parametrize(
    ("triage", "seen_at", "kind"),
    [
        ('"the nn.Module contract"', ["0.7.2"], "wider"),  # every release, gone after 0.7.2: a return would be hidden
        ('"the nn.Module contract"', ["0.7.2", "0.9.0"], "triaged"),  # every release, still there at the newest
        ('{ releases = ">=0.7.1,<=0.7.2", reason = "the nn.Module contract" }', ["0.7.2"], "triaged"),  # scoped to where it shows
        ('{ releases = ">=0.7.1", reason = "the nn.Module contract" }', ["0.7.2"], "wider"),  # open-ended: holds 0.9.0 too
        ('[{ releases = "==0.6.10", reason = "another cause" }, "the nn.Module contract"]', ["0.7.2"], "wider"),  # any triage of the key
        ('{ releases = ">=0.7.1,<=0.7.2", reason = "reworded since the census" }', ["0.7.2"], "triaged"),  # by key and range, not its text
        ('"reworded since the census"', ["0.7.2"], "wider"),
    ],
)
def test_a_triage_for_every_release_of_a_finding_gone_before_the_newest_fails_the_census(
    triage: str, seen_at: list[str], kind: str, tmp_path: Path
) -> None:
    """RandomPlanckianJitter's p=1.0 `device-error (module not moved)`: seen at 0.7.2 alone, and
    once triaged for every release, so that its return at 0.9.1 would have been accepted unseen."""
    allowlist = parse_allowlist(f'[device."kornia.augmentation.RandomPlanckianJitter"]\n"device-error (module not moved)" = {triage}\n', "a.toml")
    failures = [failure for release in seen_at for failure in sweep_failures(release, {"sweeps": [PLANCKIAN]})]
    (finding,) = group_findings(failures, ["0.6.10", "0.7.2", "0.8.1", "0.9.0"], [], allowlist)
    assert finding.match["kind"] == kind
    if kind == "wider":
        assert finding.match["how"].startswith("the sweep allow-list would accept it at 0.9.0, but it was last seen at 0.7.2")
        document = census_document("kornia", "repo", "2026-11-29", [], [finding], None, [], ["suites/kornia_sweeps"])
        assert write_census(tmp_path, document, lambda line: None) == 1  # as an unmatched finding does, it fails the census


@pytest.mark.parametrize(("site", "kind"), [("kornia/x.py:apply_transform", "wider"), ("kornia/other.py:*", "triaged")])
def test_only_a_triage_at_the_findings_site_can_be_wider(site: str, kind: str) -> None:
    """A reason held to another site would never accept this finding's return: not wider (the kept
    census's finding, seen with the array's first triage, is triaged)."""
    allowlist = parse_allowlist(
        '[device."kornia.augmentation.RandomPlanckianJitter"]\n'
        f'"device-error (module not moved)" = [{{ releases = "==0.7.2", reason = "r" }}, {{ site = "{site}", reason = "any release" }}]\n', "a.toml"
    )
    row = {**PLANCKIAN, "triaged": "r", "site": "kornia/x.py:apply_transform"}
    (finding,) = group_findings(sweep_failures("0.7.2", {"sweeps": [row]}), ["0.7.2", "0.9.0"], [], allowlist)
    assert finding.match["kind"] == kind, finding.match


def test_a_kept_finding_with_no_site_can_be_wider_than_any_triage() -> None:
    """A census kept before sites (docs/census/kornia.json) says no site: each triage's site may
    be its, so the kept-census check above can still fail."""
    allowlist = parse_allowlist(
        '[device."kornia.augmentation.RandomPlanckianJitter"]\n'
        '"device-error (module not moved)" = { site = "kornia/x.py:f", reason = "any release" }\n', "a.toml"
    )
    (finding,) = group_findings(sweep_failures("0.7.2", {"sweeps": [PLANCKIAN]}), ["0.7.2", "0.9.0"], [], allowlist)
    assert finding.site == "" and finding.match["kind"] == "wider", finding


def test_one_sweep_finding_at_two_sites_is_two_findings_each_saying_where(tmp_path: Path) -> None:
    """kornia master d6e14859's RandomJPEG error at gaussian() and 0.8.1's at _quantize: two causes."""
    rows = {release: {**PLANCKIAN, "site": f"kornia/{release}.py:f"} for release in ("0.7.2", "0.8.1")}
    failures = [failure for release, row in rows.items() for failure in sweep_failures(release, {"sweeps": [row]})]
    findings = group_findings(failures, ["0.7.2", "0.8.1"], [], {})
    assert [(finding.site, finding.releases) for finding in findings] == [("kornia/0.7.2.py:f", ["0.7.2"]), ("kornia/0.8.1.py:f", ["0.8.1"])]
    document = census_document("kornia", "repo", "2026-11-29", [], findings, None, [], ["suites/kornia_sweeps"])
    write_census(tmp_path, document, lambda line: None)
    assert "device-error (module not moved) at kornia/0.8.1.py:f" in (tmp_path / "census.md").read_text()


def test_a_reason_beside_a_bugs_charge_that_would_accept_the_finding_after_the_fix_is_wider() -> None:
    """Charged to kornia-2791 where it is affected (to 0.7.1), the finding would be accepted after
    the fix by the reason that follows the charge in its array: its return hidden."""
    allowlist = parse_allowlist(
        '[device."kornia.augmentation.RandomPlanckianJitter"]\n'
        '"device-error (module not moved)" = [{ bug = "kornia-2791", reason = "the bug" }, "any release"]\n', "a.toml"
    )
    row = {**PLANCKIAN, "triaged": "the bug", "charged": "kornia-2791"}
    (finding,) = group_findings(sweep_failures("0.7.1", {"sweeps": [row]}), ["0.7.1", "0.9.0"], [], allowlist)
    assert finding.match["kind"] == "wider", finding.match


def test_no_sweep_finding_of_the_kept_kornia_census_is_triaged_for_more_releases_than_it_shows_in() -> None:
    """docs/census/kornia.json measured each sweep finding's releases (0.6.10 to 0.9.0); a triage
    that still accepts at 0.9.0 one that is gone there hides its return (wider_than_seen). Read by
    the finding's key and the triages' ranges, never their reasons (the kept census holds the text
    of its day)."""
    document = read_census(REPO / "docs" / "census" / "kornia.json")
    newest = document["releases"][-1]["release"]
    allowlist = load_allowlist(DEFAULT_ALLOWLIST)
    kept = [Finding(**{name: finding[name] for name in Finding.__dataclass_fields__ if name in finding}) for finding in document["findings"]]
    wider = [(finding.where, finding.error, finding.releases) for finding in kept if wider_than_seen(finding, newest, allowlist)]
    assert [finding for finding in kept if finding.kind == SWEEP] and not wider, wider


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('where = "a.py:f"\nerror = "E"\nhow = "h"', "needs where, error, how and one of bug, upstream, not_found, not_a_bug"),
        ('where = "a.py:f"\nerror = "E"\nhow = "h"\nbug = "kornia-1"\nupstream = "u"', "needs where, error, how and one of"),
        ('where = "a.py:f"\nerror = "E"\nhow = "h"\nbug = "kornia-1"', "bug 'kornia-1' is not in the registry"),
    ],
)
def test_a_malformed_match_is_refused_naming_its_entry(entry: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "matches.toml"
    path.write_text(f"[[kornia]]\n{entry}\n", encoding="utf-8")
    with pytest.raises(MatchesError, match=message) as refused:
        load_matches("kornia", path, frozenset({"kornia-2791"}))
    assert "matches.toml: [[kornia]] #1 (a.py:f)" in str(refused.value)


@pytest.mark.parametrize("table", ["kornia = 3", "[kornia]\nwhere = 'a.py:f'", "kornia = [1, 2]"])
def test_matches_of_another_shape_are_refused_in_one_line(table: str, tmp_path: Path) -> None:
    path = tmp_path / "matches.toml"
    path.write_text(table + "\n", encoding="utf-8")
    with pytest.raises(MatchesError, match=r"^matches.toml: kornia must be an array of tables \(\[\[kornia\]\]\)$"):
        load_matches("kornia", path)


@pytest.mark.parametrize(
    "table", ["[kornia]", "kornia = 5", '[kornia]\ntests = "tests"\ngroups = ["a"]', '[kornia]\ntests = ["t"]\ngroups = ["a"]\nsweeps = [1]']
)
def test_a_suites_table_of_another_shape_is_refused_in_one_line(table: str, tmp_path: Path) -> None:
    path = tmp_path / "suites.toml"
    path.write_text(table + "\n", encoding="utf-8")
    shape = "needs tests and groups, and beside, pytest_args, sweeps and helpers if given, as arrays of strings"
    with pytest.raises(ScanError, match=rf"\[kornia\] {shape}$"):
        load_suite("kornia", path)


def test_the_census_own_suites_table_reads() -> None:
    assert load_suite("kornia").groups == ["augmentation", "color", "enhance", "filters", "geometry"]


def test_every_match_kept_for_kornia_names_a_registered_bug_or_an_address() -> None:
    from fixtures.known_bugs.registry import load_registry

    matches = load_matches("kornia", known_bugs=frozenset(load_registry()))
    assert all(match.value.startswith("https://github.com/") for match in matches if match.kind == "upstream")


# The junit comparison the census shares with bench/simcuda_peer_suite.py --------------------------


def test_only_tests_passing_on_cpu_are_compared_and_each_lands_in_one_bin() -> None:
    cpu = {"t.A::ok": Outcome("passed"), "t.A::alarm": Outcome("passed"), "t.A::refused": Outcome("passed"), "t.A::own": Outcome("passed"),
           "t.A::broken": Outcome("failure", "boom")}
    sim = {"t.A::ok": Outcome("passed"), "t.A::alarm": Outcome("failure", "AssertionError: x"),
           "t.A::refused": Outcome("skipped", "simulated CUDA cannot"),
           "t.A::own": Outcome("skipped", "CPU only"), "t.A::broken": Outcome("failure", "boom")}
    simcuda = {"results": {"t/A.py::refused": "refused", "t/A.py::ok": "passed"}, "refused_by_feature": {"CUDA graphs": 1}}
    result = compare(cpu, sim, simcuda)
    assert result["passing_on_cpu"] == 4 and result["passed_on_both"] == 1
    assert result["failing_only_simulated"] == {"t.A::alarm": "AssertionError: x"}
    assert result["refused"] == 1 and result["skipped_by_the_test_on_cuda"] == {"t.A::own": "CPU only"}


def test_cuda_cases_only_the_simulated_run_runs_are_counted_apart() -> None:
    """torchvision's `cpu_and_cuda()` cases: the CPU run skips the cuda ones (or, under another
    device variable, has none); they are neither compared nor lost."""
    cpu = {"t.A::f[cpu]": Outcome("passed"), "t.A::f[cuda]": Outcome("skipped", "CUDA not available")}
    sim = {"t.A::f[cpu]": Outcome("passed"), "t.A::f[cuda]": Outcome("passed"), "t.A::g[cuda]": Outcome("failure", "AssertionError: y"),
           "t.A::h[cuda]": Outcome("skipped", "simulated CUDA cannot run this: nvJPEG"), "t.A::k[cuda]": Outcome("skipped", "needs two GPUs")}
    result = compare(cpu, sim, {"results": {"t/A.py::h[cuda]": "refused"}})
    assert (result["passing_on_cpu"], result["passed_on_both"], result["both_seconds"]) == (1, 1, (0.0, 0.0))
    assert result["only_simulated_passed"] == 1 and result["only_simulated_failing"] == {"t.A::g[cuda]": "AssertionError: y"}
    assert result["only_simulated_refused"] == 1


def test_the_both_sides_time_ratio_counts_only_tests_passed_on_both() -> None:
    cpu = {"t.A::f[cpu]": Outcome("passed", "", 1.0), "t.A::g[cpu]": Outcome("passed", "", 5.0)}
    sim = {"t.A::f[cpu]": Outcome("passed", "", 1.5), "t.A::g[cpu]": Outcome("failure", "x", 0.1), "t.A::f[cuda]": Outcome("passed", "", 30.0)}
    assert compare(cpu, sim, {})["both_seconds"] == (1.0, 1.5)


@pytest.mark.parametrize(("nodeid", "junit"), [("tests/a/b.py::T::f[x]", "tests.a.b.T::f[x]"), ("tests/c.py::g", "tests.c::g")])
def test_pytest_ids_are_read_in_junit_form_and_back(nodeid: str, junit: str) -> None:
    assert junit_id(nodeid) == junit
    assert node_id(junit, nodeid.partition("::")[0]) == nodeid


# The command, end to end ------------------------------------------------------------------------

RELEASES = {
    # 1.0: shift() adds a CPU tensor to its input (the planted device bug); 1.1 fixes it.
    # scale() multiplies by a CPU tensor in both: one finding over both releases.
    "1.0": "def shift(x):\n    return x + torch.ones(3)\n",
    "1.1": "def shift(x):\n    return x + torch.ones(3, device=x.device)\n",
}
SCALE = "def scale(x):\n    return x * torch.full((3,), 2.0)\n"
TESTS = '''
import torch
from plantedpkg import scale, shift


def test_shift_keeps_the_device(device):
    x = torch.zeros(3, device=device)
    assert shift(x).device == x.device


def test_scale_keeps_the_device(device):
    assert scale(torch.zeros(3, device=device)).device.type == torch.device(device).type


def test_fails_on_both_sides(device):
    assert shift(torch.zeros(3, device=device)).sum() == 99
'''
CONFTEST = '''
import pytest
import torch


@pytest.fixture
def device():
    return torch.device("cpu")
'''


def planted_release(cache: Path, release: str) -> None:
    """The release as the census's cache holds an installed one: the package and its dist-info."""
    folder = release_folder(cache, "plantedpkg", release)
    (folder / "plantedpkg").mkdir(parents=True)
    (folder / "plantedpkg" / "__init__.py").write_text(f"import torch\n\n\n{RELEASES[release]}\n\n{SCALE}", encoding="utf-8")
    (folder / f"plantedpkg-{release}.dist-info").mkdir()
    (folder / f"plantedpkg-{release}.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: plantedpkg\nVersion: {release}\n")


def git(repo: Path, *arguments: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *arguments], check=True, capture_output=True)


def planted_repository(repo: Path) -> None:
    """Its tests at tags v1.0 and v1.1 (the same tests: the fix is in the package)."""
    (repo / "tests" / "core").mkdir(parents=True)
    (repo / "tests" / "core" / "test_planted.py").write_text(textwrap.dedent(TESTS), encoding="utf-8")
    (repo / "conftest.py").write_text(textwrap.dedent(CONFTEST), encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "tests")
    git(repo, "tag", "v1.0")
    git(repo, "tag", "v1.1")


def test_a_census_of_two_releases_groups_what_fails_only_simulated_by_cause(tmp_path: Path) -> None:
    """`python -m reports census` as a user types it, forked from the self-tests' warm Python
    (helpers/warm_python.py), as are the four pytest sessions it starts."""
    cache, repo, out = tmp_path / "cache", tmp_path / "repo", tmp_path / "out"
    for release in RELEASES:
        planted_release(cache, release)
    planted_repository(repo)
    suites = tmp_path / "suites.toml"
    suites.write_text('[plantedpkg]\ntests = ["tests"]\nbeside = ["conftest.py"]\ngroups = ["core"]\n', encoding="utf-8")
    matches = tmp_path / "matches.toml"
    matches.write_text(
        '[[plantedpkg]]\nwhere = "plantedpkg/__init__.py:scale"\nerror = "RuntimeError: Expected all tensors"\n'
        'not_found = "searched the tracker for scale, 2026-11-28"\nhow = "nothing under its name"\n',
        encoding="utf-8",
    )
    done = warm_python.run(
        [
            sys.executable, "-m", "reports", "census", "plantedpkg", "1.0..1.1", "--repo", str(repo), "--out", str(out), "--cache", str(cache),
            "--suites", str(suites), "--matches", str(matches), "--workers", "0",
        ],
        cwd=REPO, env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}, timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the shift finding is unmatched
    assert "plantedpkg 1.0 (tests from v1.0): 2 pass plainly, 2 of them fail only simulated" in done.stdout
    assert "plantedpkg 1.1 (tests from v1.1): 2 pass plainly, 1 of them fail only simulated" in done.stdout
    document = json.loads((out / "census.json").read_text(encoding="utf-8"))
    findings = {finding["where"]: finding for finding in document["findings"]}
    assert set(findings) == {"plantedpkg/__init__.py:shift", "plantedpkg/__init__.py:scale"}
    shift, scale = findings["plantedpkg/__init__.py:shift"], findings["plantedpkg/__init__.py:scale"]
    assert (shift["releases"], shift["match"]["kind"]) == (["1.0"], "unmatched")
    assert (scale["first"], scale["last"], scale["match"]["kind"]) == ("1.0", "1.1", "not_found")
    assert shift["error"].startswith("RuntimeError: Expected all tensors to be on the same device")
    assert scale["reproducer"] == "plantedpkg==1.1, its tests at v1.1: pytest --simcuda tests/core/test_planted.py::test_scale_keeps_the_device"
    assert [run["counts"]["plain_failures"] for run in document["releases"]] == [1, 1]
    assert (out / "census.md").read_text(encoding="utf-8") == census_markdown(document)
    assert "Census: plantedpkg" in (out / "census.html").read_text(encoding="utf-8")


def test_a_folder_that_is_not_a_repository_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["census", "kornia", "0.8.1..0.9.0", "--repo", str(tmp_path), "--out", str(tmp_path / "out")])
    error = capsys.readouterr().err
    assert status == 2 and error.startswith(f"error: --repo {tmp_path}: not a git repository (") and error.count("\n") == 1


def lose_blob(repo: Path, path: str) -> None:
    """The file's contents gone from the repository, as in a partial clone that never fetched them."""
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", f"HEAD:{path}"], capture_output=True, text=True, check=True).stdout.strip()
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()


def test_tests_are_exported_from_a_partial_clone_unless_a_file_the_census_runs_is_missing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    planted_repository(repo)
    (repo / "tests" / "data").mkdir()
    (repo / "tests" / "data" / "large.bin").write_bytes(b"x" * 10)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "data")
    lose_blob(repo, "tests/data/large.bin")
    suite = CensusSuite(tests=["tests", "test"], beside=["conftest.py", "testing"], groups=["core"], pytest_args=[], sweeps=[], helpers=[])
    (tmp_path / "a").mkdir()
    assert export_tests(repo, "HEAD", suite, tmp_path / "a") == ("tests", ["tests/data/large.bin"])
    assert (tmp_path / "a" / "tests" / "core" / "test_planted.py").read_text(encoding="utf-8") == textwrap.dedent(TESTS)
    assert (tmp_path / "a" / "conftest.py").is_file() and not (tmp_path / "a" / "tests" / "data" / "large.bin").exists()
    lose_blob(repo, "tests/core/test_planted.py")
    (tmp_path / "b").mkdir()
    with pytest.raises(ScanError, match=r"HEAD: .* lacks the contents of 1 test file\(s\) the census runs, e.g. tests/core/test_planted.py"):
        export_tests(repo, "HEAD", suite, tmp_path / "b")


def kept_session(folder: Path, side: str, failure: str = "") -> None:
    """A junit file as the census keeps each side's session: one test, passed or failing with `failure`."""
    problem = f'<failure message="{failure.splitlines()[-1]}">{escape(failure)}</failure>' if failure else ""
    (folder / f"{side}.xml").write_text(
        f'<testsuites><testsuite><testcase classname="tests.t" name="test_a" file="tests/t.py" time="0.1">{problem}</testcase>'
        "</testsuite></testsuites>",
        encoding="utf-8",
    )


def keep_census(out: Path) -> None:
    """census.json as a census of kornia 0.8.2 keeps it, no finding drawn yet."""
    runs = [{"release": "0.8.2", "tests_from": "v0.8.2", "left_out": [], "counts": {}, "install_s": 0.0, "plain_s": 1.0, "simulated_s": 1.0,
             "sweeps_s": 0.0}]
    (out / "census.json").write_text(json.dumps(census_document("kornia", "repo", "2026-11-28", runs, [], None)), encoding="utf-8")


def census_suites(folder: Path) -> Path:
    suites = folder / "suites.toml"
    suites.write_text('[kornia]\ntests = ["tests"]\ngroups = ["core"]\n', encoding="utf-8")
    return suites


def test_a_kept_census_is_analysed_and_matched_again_without_running_anything(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    kept = out / "kornia-0.8.2"
    kept.mkdir(parents=True)
    library = release_folder(cache, "kornia", "0.8.2") / "kornia" / "a.py"
    kept_session(kept, "plain")
    kept_session(kept, "simulated", f'Traceback (most recent call last):\n  File "{library}", line 3, in forward\n    x + y\n'
                 "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu!")
    keep_census(out)
    suites = census_suites(tmp_path)
    matches = tmp_path / "matches.toml"
    matches.write_text(
        '[[kornia]]\nwhere = "kornia/a.py:forward"\nerror = "RuntimeError: Expected"\n'
        'upstream = "https://github.com/kornia/kornia/issues/4536"\nhow = "its line"\n',
        encoding="utf-8",
    )
    common = ["--out", str(out), "--cache", str(cache), "--suites", str(suites)]
    status = main(["census-redraw", *common, "--matches", str(matches)])
    document = json.loads((out / "census.json").read_text(encoding="utf-8"))
    assert status == 0, capsys.readouterr()
    (finding,) = document["findings"]
    assert (finding["where"], finding["releases"]) == ("kornia/a.py:forward", ["0.8.2"])
    assert finding["match"] == {"kind": "upstream", "value": "https://github.com/kornia/kornia/issues/4536", "how": "its line"}
    assert document["releases"][0]["counts"]["failing_only_simulated"] == 1
    assert "issue 4536" in (out / "census.html").read_text(encoding="utf-8")
    assert main(["census-redraw", "--out", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'none' / 'census.json'}: cannot read: ")


@pytest.mark.parametrize("version", [99, None, "1"])
def test_a_kept_census_of_another_schema_is_refused_in_one_line(tmp_path: Path, version: object) -> None:
    """A census.json of schema 99 was redrawn as if it were this tool's."""
    fields = {"package": "kornia", "repository": "r", "date": "d", "releases": [], "stopped": None}
    path = tmp_path / "census.json"
    path.write_text(json.dumps({**fields, "census_schema_version": version} if version is not None else fields), encoding="utf-8")
    with pytest.raises(ScanError, match=rf"census.json: census_schema_version {re.escape(repr(version))}; this tool reads 1$"):
        read_census(path)
    path.write_text(json.dumps({**fields, "census_schema_version": 1}), encoding="utf-8")
    assert read_census(path)["package"] == "kornia"


@pytest.mark.parametrize(
    ("damaged", "text", "message"),
    [
        ("census.json", "{}", "census.json: not a census (package, repository, date, releases, stopped; each release a table with its 'release')"),
        ("census.json", "{broken", "census.json: not JSON ("),
        ("kornia-0.8.2/plain.xml", "<testsuites>", "kornia-0.8.2/plain.xml: not a junit XML file ("),
        ("kornia-0.8.2/simcuda.json", "{broken", "kornia-0.8.2/simcuda.json: not JSON ("),  # census.json was blamed
        ("kornia-0.8.2/simcuda.json", "[]", "kornia-0.8.2/simcuda.json: not simcuda's report (a JSON object)"),
    ],
)
def test_a_damaged_kept_census_is_one_line_naming_the_file(tmp_path: Path, capsys, damaged: str, text: str, message: str) -> None:
    """Each was a traceback (KeyError, ParseError, AttributeError) or blamed census.json."""
    out = tmp_path / "out"
    (out / "kornia-0.8.2").mkdir(parents=True)
    kept_session(out / "kornia-0.8.2", "plain")
    kept_session(out / "kornia-0.8.2", "simulated")
    keep_census(out)
    (out / damaged).write_text(text, encoding="utf-8")
    suites = census_suites(tmp_path)
    assert main(["census-redraw", "--out", str(out), "--cache", str(tmp_path / "cache"), "--suites", str(suites)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {out}/{message}"), line
