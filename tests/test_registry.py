"""The bug registry file: the real one loads; every kind of breakage names file and entry."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from fixtures.registry import DEFAULT_REGISTRY, RegistryError, load_registry, parse_bug
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
    assert [bug.id for bug in registry.values() if bug.simulable] == ["kornia-2791", "kornia-2837"]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bugs.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[demo-1\n", "not valid TOML"),
        ("", "has no entries"),
        ('demo-1 = "x"', r"\[demo-1\]: must be a table"),
        (VALID_ENTRY.replace('kind = "deterministic"\n', ""), r"\[demo-1\]: missing field\(s\): kind"),
        (VALID_ENTRY + 'severity = "high"\n', r"\[demo-1\]: unknown field\(s\): severity"),
        (VALID_ENTRY.replace('">=2.0,<2.1"', '"from 2.0"'), r"\[demo-1\]: affected = 'from 2.0' is not a PEP 440"),
        (VALID_ENTRY.replace('first_fixed = "2.1"', 'first_fixed = "soon"'), r"first_fixed = 'soon'"),
        (VALID_ENTRY.replace('"deterministic"', '"flaky"'), r"kind = 'flaky'; expected one of deterministic, race"),
        (VALID_ENTRY.replace('symptom_device = "cuda"', 'symptom_device = "tpu"'), "symptom_device = 'tpu'"),
        (VALID_ENTRY.replace('first_fixed = "2.1"', "first_fixed = 2.1"), r"must be strings: first_fixed"),
        (VALID_ENTRY + 'probe = "no_colon"\n', "expected 'module:function'"),
        (VALID_ENTRY + 'ambiguous = "==1.0"\n', "ambiguous versions need a probe"),
        (VALID_ENTRY + 'probe = "m:f"\nambiguous = "one"\n', "ambiguous = 'one' is not a PEP 440"),
        (VALID_ENTRY.replace('first_fixed = "2.1"\n', ""), r"missing field\(s\): first_fixed \(affected = '<2.1,>=2.0' ends"),
        (VALID_ENTRY + "notes = 3\n", r"must be strings: notes"),
        (VALID_ENTRY + 'simulable = "yes"\n', r"must be true or false: simulable"),
    ],
)
def test_broken_registry_names_file_and_entry(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(RegistryError, match=message) as raised:
        load_registry(path)
    assert str(raised.value).startswith(str(path))


def test_missing_registry_file(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="cannot read the bug registry"):
        load_registry(tmp_path / "absent.toml")


def test_a_bug_with_no_fix_yet_has_an_open_range_and_says_so() -> None:
    unfixed = VALID_ENTRY.replace('affected = ">=2.0,<2.1"', 'affected = ">=2.0"').replace('first_fixed = "2.1"\n', "")
    unfixed = unfixed.replace('fix = "https://example.invalid/pull/2"\n', 'notes = "closing change unknown"\n')
    bug = parse_bug(Path("bugs.toml"), "demo-1", tomllib.loads(unfixed)["demo-1"])
    assert (bug.first_fixed, bug.fix, bug.notes) == (None, None, "closing change unknown")
    assert bug.fix_status() == "no release fixes it yet"
    proposed = parse_bug(Path("bugs.toml"), "demo-1", {**tomllib.loads(unfixed)["demo-1"], "fix": "https://e.invalid/pull/9"})
    assert proposed.fix_status() == "no release fixes it yet (proposed fix, not released: https://e.invalid/pull/9)"
    assert load_registry(DEFAULT_REGISTRY)["kornia-2791"].fix_status() == "fixed in 0.7.2 by https://github.com/kornia/kornia/pull/2792"


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
