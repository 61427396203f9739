"""Self-tests of the harness. `pytester` runs small pytest sessions with the harness plugins;
tests/helpers/plugin_fault_matrix.py adds the `catches` marker and prints the fault x oracle matrix."""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from fixtures.plugins import HARNESS_PLUGINS
from reports.run.plugin_results import SELF_TEST_ENV
from tests.helpers import warm_python

pytest_plugins = ["pytester", "tests.helpers.plugin_fault_matrix"]


REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"


def whole_folder_run(args: list[str], invocation: Path) -> bool:
    """Whether the test locations asked for are this folder and nothing else (`pytest tests`)."""
    return [(invocation / arg).resolve() for arg in args] == [TESTS]


def inside_this_folder(args: list[str], invocation: Path) -> bool:
    """Whether every test location asked for lies in this folder (not `pytest --bug ID`, which loads it too)."""
    return bool(args) and all((invocation / arg.partition("::")[0]).resolve().is_relative_to(TESTS) for arg in args)


def one_torch_thread(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a distributed run sets for its workers and every Python they start: one torch
    intra-op thread each, unless the caller chose a count. With a worker per core, each process's
    OpenMP pool would spin for work on the cores the other workers' processes need: a sixth of the
    run's time (docs/reference/speed.md)."""
    return {} if "OMP_NUM_THREADS" in environ else {"OMP_NUM_THREADS": "1"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which turns -n into workers
def pytest_cmdline_main(config: pytest.Config) -> None:
    """`pytest tests` runs on every core (pytest-xdist, one file per worker at a time): most
    self-tests start pytest sessions of their own, which are CPU-bound, so the contributor's loop
    takes about half the time on two cores (docs/reference/speed.md). `-n 0` runs it in one process, and so
    does a selection of files or node ids inside tests/, where starting workers costs more than
    it saves. Any self-test run on workers gives each process one torch thread (`one_torch_thread`);
    an explicit `-n` keeps xdist's own order of the files (most tests first), not LONGEST_FIRST."""
    option = config.option
    if hasattr(config, "workerinput"):
        return
    explicit = getattr(option, "numprocesses", 0) is not None  # -n given, or xdist not loaded
    invocation = config.invocation_params.dir
    if not (explicit or option.usepdb or option.collectonly) and whole_folder_run(config.args, invocation):
        option.numprocesses, option.dist = "auto", "loadfile"
        option.loadscopereorder = False  # xdist would hand out the files with most tests first: LONGEST_FIRST decides
    if getattr(option, "numprocesses", None) and inside_this_folder(config.args, invocation):
        os.environ.update(one_torch_thread(os.environ))  # before the workers start: they and their Pythons inherit it


# The longest files first (their worker-seconds in one `pytest tests --junitxml` run: docs/reference/speed.md,
# the `pytest tests` row): xdist's loadfile hands files out in collection order (its reordering by
# test count turned off), and a long file started last is a tail on one worker while the other idles.
LONGEST_FIRST = (
    "test_bisect.py", "test_fault_planted_libraries.py", "test_readme_options.py", "test_simcuda_op_conformance.py",
    "test_gpu_runner_rehearsal.py", "test_suite_imports_guarded.py", "test_containment.py", "test_device_sessions.py",
    "test_known_bug_sessions.py", "test_simcuda_plugin.py", "test_report_browser.py",
)


# `pytest tests -m quick`: what a new bug's four parts can break (CONTRIBUTING.md), quickly (its time:
# docs/reference/speed.md): the registry's checks, the guarded imports, the matrix and threshold scans, the kornia
# suites' shared device oracle, and every bug's own fault test (faults/test_fault_<package>_<number>.py).
QUICK = (
    "registry/test_registry.py", "registry/test_suite_imports_guarded.py", "registry/test_verdicts.py", "registry/test_race_record.py",
    "faults/test_fault_matrix.py", "faults/test_oracle_thresholds.py", "faults/test_fault_device_oracle.py",
)
BUG_FAULT_TEST = re.compile(r"faults/test_fault_[a-z0-9]+_[0-9]+\.py")


def is_quick(path: Path) -> bool:
    if not path.is_relative_to(TESTS):  # `pytest --bug ID` loads this file too (see started_sessions_write_no_default_reports)
        return False
    relative = path.relative_to(TESTS).as_posix()
    return relative in QUICK or BUG_FAULT_TEST.fullmatch(relative) is not None


@dataclass(frozen=True)
class OwnStep:
    """Self-tests CI runs as a step of their own, outside `pytest tests` and its time budget: marked
    with `marker`, skipped by `pytest tests` naming `option`, which runs them and only them."""

    marker: str
    option: str
    what: str  # one such test, as its skip reason names it
    help: str  # the option's

    @property
    def dest(self) -> str:
        return self.option.removeprefix("--").replace("-", "_")

    @property
    def not_asked_for(self) -> str:
        return f"{self.what}: `pytest tests {self.option}` runs it"


# The release range: the docs' release examples, the scan, old releases' GPU jobs (beside the
# release scan in CI). The runner's day: the suites' whole runs, end to end: the GPU workflow's
# steps, the acceptance run and the default run on the simulated runner, and a CPU machine's
# default run with its page in Chromium (their time: docs/reference/speed.md).
RELEASE_RANGE = OwnStep(
    "release_range", "--release-range", "a release-range rehearsal (installs releases from the package index)",
    "run only the release-range rehearsals (self-tests that install releases from the package index)",
)
RUNNER_DAY = OwnStep(
    "runner_day", "--runner-day", "a runner's day (a whole run of the suites, on SIMCUDA_RUNNER_GPUS or a CPU machine's default)",
    "run only the runner's day: the suites' whole runs (the GPU workflow's steps, the acceptance run and the default run on the "
    "simulated GPU runner; a CPU machine's default run with its page in Chromium)",
)
OWN_STEPS = (RELEASE_RANGE, RUNNER_DAY)
NOT_ASKED_FOR = RELEASE_RANGE.not_asked_for


def pytest_addoption(parser: pytest.Parser) -> None:
    for step in OWN_STEPS:
        parser.addoption(step.option, action="store_true", help=step.help)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "quick: the contributor's quick subset (`pytest tests -m quick`, tests/README.md)")
    for step in OWN_STEPS:
        config.addinivalue_line("markers", f"{step.marker}: {step.not_asked_for}")


def pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        return False
    return True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: position for position, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own order kept
    for item in items:
        if is_quick(item.path):
            item.add_marker(pytest.mark.quick)
    asked = [step for step in OWN_STEPS if config.getoption(step.dest, False)]  # absent: `pytest --bug ID` loads this file too
    if not asked:
        for item in items:
            for step in (step for step in OWN_STEPS if item.get_closest_marker(step.marker)):
                item.add_marker(pytest.mark.skip(reason=step.not_asked_for))
        return
    chosen, deselected = [], []
    for item in items:
        (chosen if any(item.get_closest_marker(step.marker) for step in asked) else deselected).append(item)
    config.hook.pytest_deselected(items=deselected)
    items[:] = chosen
    in_range = [item for item in chosen if item.get_closest_marker(RELEASE_RANGE.marker)]
    if in_range and not pypi_reachable():
        for item in in_range:
            item.add_marker(pytest.mark.skip(reason="pypi.org:443 unreachable: a release-range rehearsal installs releases from PyPI"))


def load_script(path: Path) -> ModuleType:
    """A script that is no package's module (bench/), imported from its file."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules while the class is made, not after
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.fixture(scope="session", autouse=True)
def started_sessions_write_no_default_reports() -> Iterator[None]:
    """Every session a self-test starts (in process, pytester subprocess or plain subprocess)
    inherits $HARNESS_SELF_TEST, so none writes over the suites' reports/out/. Set for the
    self-tests' own run only, never at import: pytest imports this file for `pytest --bug ID`
    too (it takes the value for a path and loads the root's test* conftests)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SELF_TEST_ENV, "1")
        yield


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's pytester, whose subprocess sessions (`runpytest_subprocess`) fork from a Python
    that has imported torch already (helpers/warm_python.py): the same command, environment and
    files, without importing torch anew for each."""
    monkeypatch.setattr(pytester, "popen", warm_python.pytester_popen(pytester))
    return pytester


@pytest.fixture
def harness(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose sessions, in process or in a subprocess, load the harness plugins as the
    repository's conftest does."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makeconftest(f"pytest_plugins = {list(HARNESS_PLUGINS)!r}")
    return pytester
