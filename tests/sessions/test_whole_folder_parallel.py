"""`pytest tests` (the whole folder) runs on pytest-xdist's workers, each process with one torch
thread; any narrower selection runs in one process (tests/conftest.py, `pytest_cmdline_main`)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tests.conftest import LONGEST_FIRST, REPO, TESTS, inside_this_folder, one_torch_thread, pytest_cmdline_main, whole_folder_run


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


def run_cmdline_main(args: list[str], numprocesses: int | str | None) -> SimpleNamespace:
    """tests/conftest.py's pytest_cmdline_main on a stand-in config; the option namespace after it."""
    option = SimpleNamespace(numprocesses=numprocesses, usepdb=False, collectonly=False)
    pytest_cmdline_main(SimpleNamespace(option=option, args=args, invocation_params=SimpleNamespace(dir=REPO)))
    return option


def test_the_whole_folder_runs_its_longest_files_first_on_workers_with_one_torch_thread(monkeypatch, pytestconfig) -> None:
    monkeypatch.setattr(os, "environ", {key: value for key, value in os.environ.items() if key != "OMP_NUM_THREADS"})
    option = run_cmdline_main(["tests"], None)
    assert (option.numprocesses, option.dist) == ("auto", "loadfile")
    # xdist's own option (else xdist hands out the files with most tests first, not LONGEST_FIRST)
    assert option.loadscopereorder is False and pytestconfig.getoption("loadscopereorder") is not None
    assert os.environ["OMP_NUM_THREADS"] == "1"
    assert all(any(TESTS.rglob(name)) for name in LONGEST_FIRST)  # no stale name


@pytest.mark.parametrize(
    ("args", "numprocesses"),
    [(["tests"], 0), (["suites"], 2), (["tests", "suites"], 2)],  # `-n 0`; `pytest --bug ID -n 2` (testpaths: suites)
)
def test_a_run_in_one_process_or_of_the_suites_keeps_torchs_threads(monkeypatch, args: list[str], numprocesses: int) -> None:
    monkeypatch.setattr(os, "environ", {key: value for key, value in os.environ.items() if key != "OMP_NUM_THREADS"})
    option = run_cmdline_main(args, numprocesses)
    assert "OMP_NUM_THREADS" not in os.environ and not hasattr(option, "dist")


@pytest.mark.parametrize(
    ("args", "inside"),
    [
        (["tests"], True),
        (["tests/sessions", "tests/registry/test_registry.py::test_each_jpeg_bug_collects_only_its_own_tests"], True),
        (["tests", "suites"], False),
        (["suites"], False),  # `pytest --bug ID`: pytest gives it the testpaths, and loads tests/conftest.py too
        ([], False),
    ],
)
def test_the_distributed_self_test_runs_are_told_apart_from_the_suites(args: list[str], inside: bool) -> None:
    assert inside_this_folder(args, REPO) is inside


@pytest.mark.parametrize(
    ("environ", "set_for_workers"),
    [({}, {"OMP_NUM_THREADS": "1"}), ({"OMP_NUM_THREADS": "4"}, {}), ({"OMP_NUM_THREADS": ""}, {})],
)
def test_workers_get_one_torch_thread_unless_the_caller_chose(environ: dict, set_for_workers: dict) -> None:
    assert one_torch_thread(environ) == set_for_workers


def test_a_worker_runs_torch_on_the_threads_its_run_set(pytestconfig) -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ or not inside_this_folder(pytestconfig.args, pytestconfig.invocation_params.dir):
        pytest.skip("checks a pytest-xdist worker of a self-test run (`pytest tests`); this run has none")
    threads = os.environ["OMP_NUM_THREADS"]  # the run's, or the caller's
    if not threads.isdigit():
        pytest.skip(f"OMP_NUM_THREADS={threads!r} is the caller's and no count")
    assert torch.get_num_threads() == int(threads)
