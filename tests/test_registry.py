"""The bug registry file: the real one loads; every kind of breakage names file and entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.registry import DEFAULT_REGISTRY, RegistryError, load_registry

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


def test_the_shipped_registry_holds_the_five_bugs() -> None:
    registry = load_registry(DEFAULT_REGISTRY)
    assert list(registry) == ["torchvision-8587", "kornia-2791", "kornia-2837", "sam2-460", "torchvision-8855"]
    assert registry["kornia-2837"].affected.contains("0.7.2.dev0", prereleases=True)
    assert not registry["kornia-2837"].affected.contains("0.7.2", prereleases=True)
    assert registry["torchvision-8587"].kind == "race"
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
