"""harness_command_line.py, the install's pytest11 entry point: which words it takes for option
values, which configuration is the harness's, and that another project in the same environment
meets pytest's own behaviour. Every README form it repairs is run end to end in
test_readme_options.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_command_line import DISTRIBUTION, is_harness_config, values_taken_for_paths
from tests.conftest import REPO

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
