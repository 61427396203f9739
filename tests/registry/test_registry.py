"""The bug registry file: the real one loads; every kind of breakage names file and entry."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from fixtures.known_bugs.registry import DEFAULT_REGISTRY, Bug, RegistryError, load_registry, parse_bug
from tests.conftest import REPO
from tests.helpers import warm_python

VALID_ENTRY = """
[demo-1]
title = "a demo bug"
package = "torch"
affected = ">=2.0,<2.1"
first_fixed = "2.1"
issue = "https://example.invalid/issues/1"
fix = "https://example.invalid/pull/2"
kind = "deterministic"
symptom_device = "cuda"
"""


SHIPPED = load_registry(DEFAULT_REGISTRY)
BUG_ID = re.compile(r"(?P<package>[a-z0-9]+)-(?P<number>[0-9]+)")
by_id = pytest.mark.parametrize("bug", list(SHIPPED.values()), ids=list(SHIPPED))


def suite_folders(bug: Bug) -> list[Path]:
    """suites/<package>_<number>_<slug>/ for <package>-<number> (CONTRIBUTING.md, "Adding a bug")."""
    package, number = bug.id.split("-")
    return sorted(path for path in (REPO / "suites").glob(f"{package}_{number}_*") if path.is_dir())


@by_id
def test_a_shipped_bug_id_is_its_package_and_upstream_number(bug: Bug) -> None:
    match = BUG_ID.fullmatch(bug.id)
    assert match, f"{bug.id}: a bug id is <package>-<upstream issue or pull request number>, e.g. kornia-3028"
    assert bug.package.replace("-", "").startswith(match["package"]), f"{bug.id}: its package is {bug.package}"
    assert bug.issue.rstrip("/").endswith(f"/{match['number']}"), f"{bug.id}: issue = {bug.issue} is not upstream number {match['number']}"


@by_id
def test_a_shipped_bug_has_one_suite_folder_whose_readme_names_it_and_whose_code_ties_tests_to_it(bug: Bug) -> None:
    folders = suite_folders(bug)
    assert len(folders) == 1, f"{bug.id}: expected one folder suites/{bug.id.replace('-', '_')}_<slug>/, found {folders}"
    readme = folders[0] / "README.md"
    assert readme.is_file(), f"{bug.id}: {readme} is missing"
    number = bug.id.split("-")[1]
    assert number in readme.read_text(encoding="utf-8").split("\n", 1)[0], f"{readme}: its title names the bug ({bug.id})"
    # A test file's marker, or the folder's own marks (the codec kit's `codec_marks`).
    tied = [path.name for path in folders[0].glob("*.py") if f'"{bug.id}"' in path.read_text(encoding="utf-8")]
    assert tied, f"{bug.id}: nothing in {folders[0]} names known_bug({bug.id!r})"


@by_id
def test_a_shipped_bug_without_a_fixed_release_is_open_ended_and_says_what_is_unsettled(bug: Bug) -> None:
    if bug.first_fixed is not None:
        assert not bug.affected.contains(str(bug.first_fixed), prereleases=True), f"{bug.id}: first_fixed is inside affected"
        return
    assert bug.notes, f"{bug.id}: no fixed release, and no notes saying why"
    assert bug.affected.contains("999.0"), f"{bug.id}: no fixed release, so every later release must be affected"


def test_kornia_2837_is_affected_only_on_the_unreleased_dev_build() -> None:
    assert SHIPPED["kornia-2837"].affected.contains("0.7.2.dev0", prereleases=True)
    assert not SHIPPED["kornia-2837"].affected.contains("0.7.2", prereleases=True)


def test_sam2_from_git_saying_1_0_is_placed_by_the_probe() -> None:
    bug = SHIPPED["sam2-460"]
    assert bug.ambiguous is not None and bug.ambiguous.contains("1.0") and bug.probe


def test_the_nvjpeg_bugs_are_races_the_simulated_device_cannot_show() -> None:
    jpeg = [bug for bug in SHIPPED.values() if bug.package == "torchvision" and bug.id != "torchvision-8855"]
    assert jpeg and all(bug.kind == "race" and not bug.simulable for bug in jpeg)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bugs.toml"
    path.write_text(text)
    return path


def test_an_entry_reads_into_every_field(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_ENTRY + 'probe = "fixtures.known_bugs.probes:demo"\n' + VALID_ENTRY.replace("demo-1", "demo-2"))
    registry = load_registry(path)
    assert registry["demo-1"] == Bug(
        id="demo-1",
        title="a demo bug",
        package="torch",
        affected=SpecifierSet(">=2.0,<2.1"),
        first_fixed=Version("2.1"),
        issue="https://example.invalid/issues/1",
        fix="https://example.invalid/pull/2",
        kind="deterministic",
        symptom_device="cuda",
        probe="fixtures.known_bugs.probes:demo",
    )
    assert registry["demo-2"].id == "demo-2"
    assert registry["demo-2"].probe is None


# Whole messages, so that a lost file name, entry or list item cannot pass; lists of two items
# check how they are joined.
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('demo-1 = "x"', "must be a table of fields"),
        (
            VALID_ENTRY.replace('kind = "deterministic"\n', "").replace('title = "a demo bug"\n', ""),
            "missing field(s): title, kind",
        ),
        (VALID_ENTRY + 'severity = "high"\nowner = "me"\n', "unknown field(s): owner, severity"),
        (
            VALID_ENTRY.replace('first_fixed = "2.1"', "first_fixed = 2.1").replace('"deterministic"', "1"),
            "field(s) must be strings: first_fixed, kind",
        ),
        (
            VALID_ENTRY.replace('">=2.0,<2.1"', '"from 2.0"'),
            "affected = 'from 2.0' is not a PEP 440 specifier",
        ),
        (
            VALID_ENTRY.replace('first_fixed = "2.1"', 'first_fixed = "soon"'),
            "first_fixed = 'soon' is not a PEP 440 version",
        ),
        (
            VALID_ENTRY.replace('"deterministic"', '"flaky"'),
            "kind = 'flaky'; expected one of deterministic, race",
        ),
        (
            VALID_ENTRY.replace('symptom_device = "cuda"', 'symptom_device = "tpu"'),
            "symptom_device = 'tpu'; expected one of cuda, cpu",
        ),
        (VALID_ENTRY + 'probe = "no_colon"\n', "probe = 'no_colon'; expected 'module:function'"),
        (VALID_ENTRY + 'ambiguous = "==1.0"\n', "ambiguous versions need a probe to place them"),
        (VALID_ENTRY + 'probe = "m:f"\nambiguous = "one"\n', "ambiguous = 'one' is not a PEP 440 specifier"),
        (VALID_ENTRY.replace('first_fixed = "2.1"\n', ""), "missing field(s): first_fixed (affected = '<2.1,>=2.0' ends, so some release fixes it)"),
        (VALID_ENTRY + "notes = 3\n", "field(s) must be strings: notes"),
        (VALID_ENTRY + 'simulable = "yes"\n', "field(s) must be true or false: simulable"),
        (
            VALID_ENTRY.replace('first_fixed = "2.1"', 'first_fixed = "2.0.5"'),
            "first_fixed = '2.0.5' lies inside affected = '<2.1,>=2.0'",
        ),
        (
            VALID_ENTRY.replace('">=2.0,<2.1"', '">=2.2,<2.1"'),
            "affected = '<2.1,>=2.2' holds no version (its lower bound is above its upper)",
        ),
        (
            VALID_ENTRY.replace('">=2.0,<2.1"', '">2.1,<=2.1"'),
            "affected = '<=2.1,>2.1' holds no version (its lower bound is above its upper)",
        ),
        (
            VALID_ENTRY.replace('"deterministic"', '"race"') + "simulable = true\n",
            "simulable = true for a race: the simulated device cannot show a race",
        ),
    ],
)
def test_broken_entry_is_one_line_naming_file_entry_and_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(RegistryError) as raised:
        load_registry(path)
    assert str(raised.value) == f"{path}: [demo-1]: {problem}"


@pytest.mark.parametrize(("text", "problem"), [("[demo-1\n", "not valid TOML"), ("", "the bug registry has no entries")])
def test_broken_file_names_the_file(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(RegistryError) as raised:
        load_registry(path)
    assert str(raised.value).startswith(f"{path}: {problem}")


def test_missing_registry_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(RegistryError) as raised:
        load_registry(path)
    assert str(raised.value) == f"{path}: cannot read the bug registry: No such file or directory"


def test_a_bug_with_no_fix_yet_has_an_open_range_and_says_so() -> None:
    unfixed = VALID_ENTRY.replace('affected = ">=2.0,<2.1"', 'affected = ">=2.0"').replace('first_fixed = "2.1"\n', "")
    unfixed = unfixed.replace('fix = "https://example.invalid/pull/2"\n', 'notes = "closing change unknown"\n')
    bug = parse_bug(Path("bugs.toml"), "demo-1", tomllib.loads(unfixed)["demo-1"])
    assert (bug.first_fixed, bug.fix, bug.notes) == (None, None, "closing change unknown")
    assert bug.fix_status() == "no release fixes it yet"
    proposed = parse_bug(Path("bugs.toml"), "demo-1", {**tomllib.loads(unfixed)["demo-1"], "fix": "https://e.invalid/pull/9"})
    assert proposed.fix_status() == "no release fixes it yet (proposed fix, not released: https://e.invalid/pull/9)"
    unlinked = {key: value for key, value in tomllib.loads(VALID_ENTRY)["demo-1"].items() if key != "fix"}
    assert parse_bug(Path("bugs.toml"), "demo-1", unlinked).fix_status() == "fixed in 2.1"
    assert load_registry(DEFAULT_REGISTRY)["kornia-2791"].fix_status() == "fixed in 0.7.2 by https://github.com/kornia/kornia/pull/2792"


# Every operator that caps the range needs first_fixed; one that leaves it open allows no fix yet.
@pytest.mark.parametrize(
    ("affected", "ends"),
    [("<2.1", True), ("<=2.0", True), ("==2.0", True), ("===2.0", True), ("~=2.0", True), (">=2.0", False), (">2.0,!=2.1", False)],
)
def test_only_an_open_range_may_leave_out_first_fixed(affected: str, ends: bool) -> None:
    entry = {key: value for key, value in tomllib.loads(VALID_ENTRY)["demo-1"].items() if key != "first_fixed"}
    entry["affected"] = affected
    if ends:
        with pytest.raises(RegistryError, match=r"missing field\(s\): first_fixed"):
            parse_bug(Path("bugs.toml"), "demo-1", entry)
    else:
        assert parse_bug(Path("bugs.toml"), "demo-1", entry).first_fixed is None


JPEG_SUITES = ("suites/torchvision_8587_encode_jpeg", "suites/torchvision_9060_threaded_encode", "suites/torchvision_9606_decode_freed_memory")


def collected_for_bug(bug_id: str) -> set[str]:
    run = warm_python.run(
        [sys.executable, "-m", "pytest", *JPEG_SUITES, "--bug", bug_id, "--collect-only", "-q", "-p", "no:cacheprovider", "--device", "cpu"],
        cwd=REPO, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return {line.split("::")[0] for line in run.stdout.splitlines() if "::" in line}


def test_each_jpeg_bug_collects_only_its_own_tests() -> None:
    """The look-alikes are charged to their own entries: --bug torchvision-8587 runs neither."""
    assert collected_for_bug("torchvision-8587") == {
        f"suites/torchvision_8587_encode_jpeg/{name}.py"
        for name in ("test_consecutive_encodes", "test_gpu_decode", "test_list_input", "test_sizes")
    }
    assert collected_for_bug("torchvision-9606") == {"suites/torchvision_9606_decode_freed_memory/test_decode_after_free.py"}


def test_no_tracked_file_points_to_facts_outside_the_repository() -> None:
    """The bugs' facts live in the suites' READMEs: a user's checkout has no shared/ folder beside it."""
    listed = subprocess.run(
        ["git", "grep", "-n", "-E", r"(\.\./shared|shared/(bugs|simulated-device|simulation-v2)\.md)"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    if listed.returncode == 128:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    assert listed.stdout == "", f"references to files outside the repository:\n{listed.stdout}"
