"""harness_command_line.py, the install's pytest11 entry point: which words it takes for option
values, which configuration is the harness's, that another project in the same environment
meets pytest's own behaviour, and that `--release-range` typed in a run of the suites is one line
naming `pytest tests --release-range`. Every README form it repairs is run end to end in
test_readme_options.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harness_command_line import (
    DISTRIBUTION,
    RELEASE_RANGE_HINT,
    collects_under,
    is_harness_config,
    release_range_hint,
    run_locations,
    values_taken_for_paths,
)
from reports.run.plugin_results import SELF_TEST_ENV
from tests.conftest import REPO, TESTS
from tests.helpers import warm_python

KNOWN = {"--simcuda", "--timeout"}


@pytest.mark.parametrize(
    ("args", "positional", "taken"),
    [
        (["--report-dir", "/ci/out"], ["/ci/out"], ["/ci/out"]),  # unknown option, its value misread
        (["--report-dir=/ci/out"], [], []),  # `=`: one word, never misread
        (["--simcuda", "/peer/tests"], ["/peer/tests"], []),  # a known flag: the path is a test location
        (["--bug", "kornia-2791", "suites/x"], ["kornia-2791", "suites/x"], ["kornia-2791"]),
        (["suites/x", "--report-dir", "/ci/out", "--seed", "3"], ["suites/x", "/ci/out", "3"], ["/ci/out", "3"]),
        (["-m", "slow", "/ci/out"], ["/ci/out"], []),  # short options are pytest's own, known in its first pass
    ],
)
def test_values_taken_for_paths_are_the_words_after_options_pytest_did_not_know(args, positional, taken) -> None:
    assert values_taken_for_paths(args, positional, KNOWN) == taken


def test_only_this_harness_pyproject_is_the_harness_config(tmp_path: Path) -> None:
    assert is_harness_config(REPO / "pyproject.toml")
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "another-project"\n')
    assert not is_harness_config(other)
    other.write_text("not toml [")
    assert not is_harness_config(other)
    assert not is_harness_config(None)
    assert DISTRIBUTION in (REPO / "pyproject.toml").read_text()


def test_another_project_meets_pytests_own_behaviour(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A project that is not the harness, in the same environment: its own conftest's option typed
    with a space before an existing outside directory fails as pytest makes it fail."""
    pytester.makepyprojecttoml('[project]\nname = "another-project"\n[tool.pytest.ini_options]\n')
    pytester.makeconftest("def pytest_addoption(parser):\n    parser.addoption('--out-dir')\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    result = pytester.runpytest_subprocess("--out-dir", str(outside), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --out-dir*"])


DECLARED = {"--release-range", "--bug"}


@pytest.mark.parametrize(
    ("args", "known", "collects_self_tests", "hinted"),
    [
        (["--release-range"], {"--bug"}, False, True),  # `pytest --release-range`: no conftest declared it
        (["--bug", "kornia-2791", "--release-range"], DECLARED, False, True),  # declared by the conftest `--bug ID` loads, suites run
        (["--release-range=1"], {"--bug"}, False, True),
        (["tests", "--release-range"], DECLARED, True, False),  # `pytest tests --release-range`: pytest's own
        (["--release-range"], {"--bug"}, True, True),  # the self-tests asked for, their conftest not loaded (--noconftest)
        (["--bug", "kornia-2791"], {"--bug"}, False, False),  # not typed
        (["--", "--release-range"], {"--bug"}, False, False),  # after `--`, a test location
        (["--release-ranges"], {"--bug"}, False, False),  # another word: pytest's own "unrecognized arguments"
    ],
)
def test_release_range_hint_is_given_where_the_suites_run(args, known, collects_self_tests, hinted) -> None:
    assert release_range_hint(args, known, collects_self_tests) == (RELEASE_RANGE_HINT if hinted else None)


@pytest.mark.parametrize(
    ("positional", "invocation", "collected", "collects_self_tests"),
    [
        ([], REPO, [REPO / "suites"], False),  # `pytest` at the root: testpaths
        (["tests"], REPO, [TESTS], True),
        (["tests/sessions/test_command_line_entry.py::test_x"], REPO, [TESTS / "sessions" / "test_command_line_entry.py"], True),
        (["."], REPO, [REPO], True),  # the whole checkout holds the self-tests
        ([], TESTS, [TESTS], True),  # `pytest` inside tests/: the invocation directory
        (["../suites"], TESTS, [REPO / "suites"], False),
    ],
)
def test_run_locations_are_pytests_and_say_whether_the_self_tests_run(positional, invocation, collected, collects_self_tests) -> None:
    locations = run_locations(positional, ["suites"], invocation, REPO)
    assert locations == collected
    assert collects_under(locations, TESTS) == collects_self_tests


@pytest.mark.parametrize("words", [["--release-range"], ["--bug", "kornia-2791", "--release-range"]])
def test_pytest_release_range_in_the_suites_is_one_line_naming_pytest_tests(words: list[str]) -> None:
    """As a user types it at the root: one usage-error line, no traceback, nothing run (so nothing
    written: it stops while pytest reads its command line)."""
    environment = {**os.environ, SELF_TEST_ENV: "1"}  # the self-tests' rule, should it ever run the suites
    done = warm_python.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *words], cwd=REPO, env=environment, timeout=300)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, lines[-20:]
    assert lines == [f"ERROR: {RELEASE_RANGE_HINT}"], lines[-20:]
    assert "`pytest tests --release-range`" in RELEASE_RANGE_HINT
