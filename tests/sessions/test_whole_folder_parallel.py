"""`pytest tests` (the whole folder) runs on pytest-xdist's workers; any narrower selection runs in
one process (tests/conftest.py, `pytest_cmdline_main`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, TESTS, whole_folder_run


@pytest.mark.parametrize(
    ("args", "invocation", "whole"),
    [
        (["tests"], REPO, True),
        (["tests/"], REPO, True),
        ([str(TESTS)], Path("/"), True),  # the absolute path, from anywhere
        (["."], TESTS, True),  # from inside the folder
        (["tests/registry/test_registry.py"], REPO, False),
        (["tests/registry/test_registry.py::test_each_jpeg_bug_collects_only_its_own_tests"], REPO, False),
        (["tests", "suites"], REPO, False),  # the mutation runner's selection
        (["suites"], REPO, False),
        ([], REPO, False),
    ],
)
def test_only_the_whole_folder_is_distributed(args: list[str], invocation: Path, whole: bool) -> None:
    assert whole_folder_run(args, invocation) is whole

