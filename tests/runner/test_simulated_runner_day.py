"""A GPU runner's day on the simulated runner (simcuda/runner.py, `SIMCUDA_RUNNER_GPUS=N`), part
one: the default `pytest` (--device all) with one GPU and with two, a first GPU run's strict
sweep, and the runner's configuration (its variable, tox, reports/observed). Part two, the GPU
workflow's steps and `python -m reports acceptance`: test_simulated_runner_steps.py. Each run is
narrowed with --bug, never by changing its command line (tests/helpers/simulated_runner.py says what a
real runner is predicted to give)."""

from __future__ import annotations

import configparser
import json
import sys
from pathlib import Path

import pytest

from reports.acceptance.steps import OBSERVED_ROOT, acceptance_root
from tests.conftest import REPO
from tests.helpers.simulated_runner import SEEN_AFTER_COLLECTION, SELECTED, check_a_runner_report, failures, pytest_on_the_runner, run, runner_env


@pytest.mark.runner_day
@pytest.mark.parametrize("gpus", [1, 2])
def test_the_default_run_on_the_runner(gpus: int, tmp_path: Path) -> None:
    done = pytest_on_the_runner(gpus, tmp_path, *SELECTED.split())
    assert done.returncode == 0, failures(done)
    assert f"simcuda: simulated {gpus}-GPU runner: no real GPU" in done.stdout  # the header
    check_a_runner_report(tmp_path, gpus)


@pytest.mark.runner_day
def test_a_first_gpu_runs_strict_sweep_on_the_runner(tmp_path: Path) -> None:
    """The device sweep's cuda:N rows decide, for the first time, what meta left inconclusive: on
    the runner every one of them is decided, and --strict-sweeps passes on the allow-list."""
    done = pytest_on_the_runner(2, tmp_path, "--strict-sweeps", "suites/kornia_sweeps/test_device_sweep.py")
    assert done.returncode == 0, failures(done)
    rows = json.loads((tmp_path / "results.json").read_text())["sweeps"]
    gpu_rows = [row for row in rows if row["device"] in ("cuda:0", "cuda:1")]
    inconclusive_on_meta = {row["callable"] for row in rows if row["device"] == "meta" and row["result"] == "inconclusive"}
    assert inconclusive_on_meta and inconclusive_on_meta <= {row["callable"] for row in gpu_rows}
    assert {row["result"] for row in gpu_rows} <= {"clean", "finding"}, [row for row in gpu_rows if row["result"] not in ("clean", "finding")]


def test_reports_observed_never_receives_a_runner_run() -> None:
    assert acceptance_root(None, simulated_runner=False) == OBSERVED_ROOT
    with pytest.raises(ValueError, match="reports/observed/ keeps real-GPU runs only"):
        acceptance_root(OBSERVED_ROOT / "2026-11-25-x", simulated_runner=True)
    assert not acceptance_root(None, simulated_runner=True).is_relative_to(OBSERVED_ROOT)


ONE_GPU_CONFTEST = SEEN_AFTER_COLLECTION.format(
    seen='(torch.cuda.is_available(), torch.cuda.device_count(), str(torch.zeros(1, device="cuda").device))'
)
COLLECTION_TIME_DEVICES = """
import torch

DEVICES = [f"cuda:{index}" for index in range(torch.cuda.device_count())]


def test_collection_saw_the_simulated_machine_and_runs_on_its_cuda_1():
    assert len(DEVICES) == 2, DEVICES
    assert torch.ones(1, device="cuda").device == torch.device("cuda:1")
"""


def test_simcuda_on_a_one_gpu_runner_leaves_its_cuda_usable_after_collection(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCUDA_RUNNER_GPUS", "1")
    pytester.makeconftest(ONE_GPU_CONFTEST)
    pytester.makepyfile(COLLECTION_TIME_DEVICES)
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)  # collection saw two GPUs, the test ran on the simulated cuda:1
    result.stdout.fnmatch_lines(["after collection: (True, 1, 'cuda:0')"])  # ... and the runner's one GPU started


def test_tox_environments_inherit_the_runner() -> None:
    """tox passes only the variables it is told to: a rehearsal's `tox -e ENV` must stay on the runner."""
    parser = configparser.ConfigParser()
    parser.read(REPO / "tox.ini")
    assert "SIMCUDA_RUNNER_GPUS" in parser["testenv"]["pass_env"].split()


def test_a_bad_gpu_count_is_one_line(tmp_path: Path) -> None:
    done = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only"], runner_env(0) | {"SIMCUDA_RUNNER_GPUS": "nine"})
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert done.stderr.strip().splitlines()[-1] == "ERROR: SIMCUDA_RUNNER_GPUS='nine': expected a GPU count from 1 to 8"
    assert "Traceback" not in done.stderr
