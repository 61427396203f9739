"""A small pytester session whose reports show every kind of row a reviewer meets: a reproduced,
a regressed and a fixed bug (seen, in the run of the release before: BEFORE) (fake bugs of the installed pytest), a device skip, a control, a
plain failure, images attached to a failing test, and a sweeps section."""

from __future__ import annotations

from pathlib import Path

import pytest

ENTRY = """
[{bug_id}]
title = "{title}"
package = "pytest"
affected = "{affected}"
first_fixed = "1"
issue = "https://example.invalid/issues/{number}"
fix = "https://example.invalid/pull/{number}1"
kind = "deterministic"
symptom_device = "cuda"
"""
BUGS = {  # bug id: (title, issue number)
    "fake-reproduced": ("a fake bug still present in the installed pytest", 11),
    "fake-regressed": ("a fake bug fixed in pytest 1 that came back", 21),
    "fake-fixed": ("a fake bug fixed in pytest 1", 31),
}
# The installed pytest is inside ">=1" and outside "<1".
NOW = {"fake-reproduced": ">=1", "fake-regressed": "<1", "fake-fixed": "<1"}
# The same tests judged as if every bug still affected this release: the "last release" run.
BEFORE = {bug_id: ">=1" for bug_id in BUGS}

TESTS = '''
import base64
import io

import pytest
from PIL import Image
from pytest_html import extras as html_extras

from fixtures.proxies.meta_proxy import ProxyResult
from fixtures.known_bugs.outcomes import BugObserved


def png(colour):
    buffer = io.BytesIO()
    Image.new("RGB", (16, 12), colour).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.known_bug("fake-reproduced", evidence="proxy")
def test_reproduced(record_property):
    record_property("size", "64x64")
    raise BugObserved("the root cause is there")


@pytest.mark.known_bug("fake-regressed", evidence="proxy")
def test_regressed(record_property, extras):
    record_property("attempts", 7)
    for name, colour in (("source", "red"), ("decoded", "green"), ("difference", "blue")):
        extras.append(html_extras.png(png(colour), name))
    raise BugObserved("decoded image differs from the source")


@pytest.mark.known_bug("fake-fixed", evidence="proxy")
def test_fixed():
    if {fixed_seen!r}:  # the last release, which still had it
        raise BugObserved("the root cause is there")


@pytest.mark.known_bug("fake-fixed")
def test_direct(device, threads):
    pass


def test_plain_failure():
    assert 1 + 1 == 3


@pytest.mark.parametrize("name, kind, detail", {sweeps!r})
def test_sweep(sweep_record, name, kind, detail):
    sweep_record("fake_sweep", name, "cpu", ProxyResult(kind, detail, found="wrong-device-output" if kind == "finding" else ""))
'''

# (callable, outcome, detail), recorded through fixtures/sweeps/plugin.py's sweep_record.
SWEEPS = [
    ("fake.gaussian_blur2d", "finding", "output on cpu, input on cuda:1"),
    ("fake.rgb_to_hsv", "inconclusive", "meta tensors have no data"),
    ("fake.rotate", "clean", ""),
]
# What the session ends with: sweeps add a pass (clean), a skip (inconclusive), an xfail (finding).
OUTCOMES = {"passed": 4, "failed": 2, "skipped": 3, "xfailed": 2}


def write_registry(path: Path, affected: dict[str, str]) -> Path:
    path.write_text(
        "".join(
            ENTRY.format(bug_id=bug_id, title=title, number=number, affected=affected[bug_id])
            for bug_id, (title, number) in BUGS.items()
        )
    )
    return path


def run_session(
    harness: pytest.Pytester, report_dir: Path, affected: dict[str, str] = NOW, *args: str, subprocess: bool = False
) -> pytest.RunResult:
    """Run the fake tests on cpu and cuda:0 (absent here: a skip) with reports in report_dir;
    `harness` (tests/conftest.py) loads the harness plugins."""
    # Where the registry still places the release inside fake-fixed's range (BEFORE), its test sees it.
    harness.makepyfile(test_fake=TESTS.format(sweeps=SWEEPS, fixed_seen=affected["fake-fixed"] == BEFORE["fake-fixed"]))
    registry = write_registry(harness.path / f"bugs-{report_dir.name}.toml", affected)
    run = harness.runpytest_subprocess if subprocess else harness.runpytest
    return run(
        f"--bug-registry={registry}", f"--report-dir={report_dir}", "--device", "cpu,cuda:0", "--threads", "1,2", *args
    )
