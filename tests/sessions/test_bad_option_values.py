"""Bad option values are one-line usage errors (exit 4) naming the option and the value, never a
traceback from deep inside."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--seed=-1", "argument --seed: '-1' is negative; a seed is 0 or more"),
        ("--seed=seven", "argument --seed: 'seven' is not a whole number"),
        ("--report-dir=/proc/forbidden", "--report-dir /proc/forbidden: cannot create it: "),
        ("--history=/srv/mirrors/kornia.git", "--history / $HARNESS_HISTORY: '/srv/mirrors/kornia.git' is not URL=PATH"),
        # A history that is not there: said at the start, not as a verdict when a build first needs it.
        (
            "--history=https://github.com/kornia/kornia=/nonexistent",
            "--history / $HARNESS_HISTORY: /nonexistent, named for github.com/kornia/kornia, holds no git repository",
        ),
        (
            "--history=https://github.com/kornia/kornia=blocked",
            "--history / $HARNESS_HISTORY: blocked, named for github.com/kornia/kornia, holds no git repository",
        ),
        (  # a path git cannot even look at: a one-line error, not an OSError traceback
            f"--history=https://github.com/kornia/kornia=/{'a' * 300}",
            f"--history / $HARNESS_HISTORY: /{'a' * 300}, named for github.com/kornia/kornia: File name too long",
        ),
        (
            "--history=https://github.com/kornia/kornia=~nosuchuser/k.git",
            "--history / $HARNESS_HISTORY: 'https://github.com/kornia/kornia=~nosuchuser/k.git': ",
        ),
        # A template that left the value out: never the default (the checkout's reports/out/, every device).
        ("--report-dir=", "--report-dir is empty; give a folder, or --no-reports"),
        ("--device=", "--device is empty"),
        ("--report-dir=blocked", "--report-dir blocked: blocked/results.json is a folder, where a report file goes"),
    ],
)
def test_a_bad_value_is_one_line_naming_it(harness, option: str, message: str) -> None:
    harness.makepyfile("def test_nothing():\n    pass\n")
    (harness.path / "blocked" / "results.json").mkdir(parents=True)  # for --report-dir=blocked
    result = harness.runpytest_subprocess(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR") or "error:" in line]
    assert any(message in line for line in errors), result.stderr.lines
    assert "Traceback" not in result.stderr.str() and "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_list_bugs_refuses_a_history_that_is_not_there(harness) -> None:
    result = harness.runpytest_subprocess("--list-bugs", "--history=https://github.com/kornia/kornia=/nonexistent")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stdout.lines == ["ERROR: --history / $HARNESS_HISTORY: /nonexistent, named for github.com/kornia/kornia, holds no git repository"]
