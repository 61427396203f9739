"""The sweep plugin end to end: a new finding is an xfail (a failure with --strict-sweeps), an
allow-listed one passes with its reason in results, and a malformed allow-list is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SWEEP_TESTS = """
from fixtures.meta_proxy import ProxyResult

def test_found(sweep_record):
    sweep_record("device", "fake.found", "meta", ProxyResult("finding", "Tensor on device cpu is not on the expected device meta!"))

def test_clean(sweep_record):
    sweep_record("device", "fake.clean", "meta", ProxyResult("clean"))

def test_unsure(sweep_record):
    sweep_record("device", "fake.unsure", "meta", ProxyResult("inconclusive", "Tensor.item() cannot be called on meta tensors"))
"""


@pytest.fixture
def allowlist(tmp_path: Path) -> Path:
    path = tmp_path / "allow.toml"
    path.write_text("[device]\n")
    return path


def run(harness, allowlist: Path, *args: str):
    harness.makepyfile(SWEEP_TESTS)
    return harness.runpytest(f"--sweep-allowlist={allowlist}", "-rxs", "-p", "no:cacheprovider", *args)


def test_new_finding_is_visible_but_not_red(harness, allowlist: Path) -> None:
    result = run(harness, allowlist)
    result.assert_outcomes(passed=1, xfailed=1, skipped=1)
    result.stdout.fnmatch_lines(["*XFAIL*test_found*new sweep finding*not on the expected device meta*"])


def test_new_finding_fails_when_strict(harness, allowlist: Path) -> None:
    run(harness, allowlist, "--strict-sweeps").assert_outcomes(passed=1, failed=1, skipped=1)


def test_triaged_finding_passes_and_is_reported(harness, allowlist: Path) -> None:
    allowlist.write_text('[device]\n"fake.found" = "looked at: harmless"\n')
    result = run(harness, allowlist, "--strict-sweeps", f"--report-dir={harness.path / 'out'}")
    result.assert_outcomes(passed=2, skipped=1)
    rows = json.loads((harness.path / "out" / "results.json").read_text())["sweeps"]
    assert {row["callable"]: row["result"] for row in rows} == {
        "fake.clean": "clean", "fake.found": "finding", "fake.unsure": "inconclusive"}
    assert next(row for row in rows if row["callable"] == "fake.found")["triaged"] == "looked at: harmless"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[device\n", "not valid TOML"),
        ('[devices]\n"x" = "y"\n', "[devices] is not a sweep table"),
        ('[state]\n"x" = ""\n', "'x' needs a non-empty reason string"),
    ],
)
def test_malformed_allowlist_is_a_one_line_usage_error(harness, allowlist: Path, text: str, message: str) -> None:
    allowlist.write_text(text)
    result = run(harness, allowlist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {allowlist}: " in result.stderr.str() and message in result.stderr.str()
