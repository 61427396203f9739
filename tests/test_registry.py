"""The bug registry file: the real one loads; every kind of breakage names file and entry."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from fixtures.known_bugs.registry import DEFAULT_REGISTRY, Bug, RegistryError, load_registry, parse_bug
from tests.conftest import REPO

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


def test_the_shipped_registry_holds_the_five_bugs_and_the_two_look_alikes() -> None:
    registry = load_registry(DEFAULT_REGISTRY)
    assert list(registry) == [
        "torchvision-8587", "torchvision-9060", "torchvision-9606", "kornia-2791", "kornia-2837", "sam2-460", "torchvision-8855"
    ]
    for unfixed in ("torchvision-9060", "torchvision-9606"):
        assert registry[unfixed].first_fixed is None and registry[unfixed].notes
        assert registry[unfixed].affected.contains("99.0")  # no fix yet: every later release is affected
    assert registry["kornia-2837"].affected.contains("0.7.2.dev0", prereleases=True)
    assert not registry["kornia-2837"].affected.contains("0.7.2", prereleases=True)
    assert registry["torchvision-8587"].kind == "race"
    assert registry["sam2-460"].ambiguous is not None and registry["sam2-460"].ambiguous.contains("1.0")
    assert [bug.id for bug in registry.values() if bug.simulable] == ["kornia-2791", "kornia-2837", "sam2-460", "torchvision-8855"]


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
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *JPEG_SUITES, "--bug", bug_id, "--collect-only", "-q", "-p", "no:cacheprovider", "--device", "cpu"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
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
