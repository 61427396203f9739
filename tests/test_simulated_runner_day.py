"""A GPU runner's whole day, rehearsed on the CPU under the simulated runner (simcuda/runner.py,
`SIMCUDA_RUNNER_GPUS=N`) with one GPU and with two: the default `pytest` (--device all), the GPU
workflow's two steps with their command lines as written (what tox runs for them), and
`python -m reports acceptance`. Each run is narrowed with --bug (through PYTEST_ADDOPTS where the
command line is fixed), never by changing the command lines.

Each gives what a real runner is predicted to give: exit 0; kornia-2791 and torchvision-8855
their registry verdicts, decided on the runner's CUDA and so simulated evidence, never direct;
torchvision-8587 never a pass (nvJPEG is refused, its tests inconclusive); and every report says
it came from the simulated runner."""

from __future__ import annotations

import configparser
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.versions import affected_status
from reports.acceptance.steps import OBSERVED_ROOT, acceptance_root
from tests.conftest import REPO
from tests.test_report_workflow import load_workflow, parallel_and_serial_steps

BUGS = ("kornia-2791", "torchvision-8855", "torchvision-8587")
SELECTED = " ".join(f"--bug {bug}" for bug in BUGS)


def runner_env(gpus: int, **extra: str) -> dict[str, str]:
    environ = {key: value for key, value in os.environ.items() if key not in ("CUDA_VISIBLE_DEVICES", "PYTEST_ADDOPTS")}
    return {**environ, "SIMCUDA_RUNNER_GPUS": str(gpus), **extra}


def run(command: list[str], environ: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=REPO, env=environ, capture_output=True, text=True, timeout=900, check=False)


def pytest_on_the_runner(gpus: int, report_dir: Path, *arguments: str) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--report-dir={report_dir}", *arguments], runner_env(gpus))


def failures(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR", "error"))]
    return "\n".join(lines)[-3000:] + done.stderr[-2000:]


def check_a_runner_report(report_dir: Path, gpus: int) -> None:
    """The verdicts a real runner is predicted to give, labelled as the simulated runner's."""
    document = json.loads((report_dir / "results.json").read_text())
    assert document["environment"]["simulated_runner"] == f"simulated {gpus}-GPU runner: no real GPU"
    assert f"on simulated {gpus}-GPU runner: no real GPU" in (report_dir / "report.html").read_text()
    verdicts = {verdict["bug_id"]: verdict for verdict in document["verdicts"] if verdict["bug_id"] in BUGS}
    registry = load_registry()
    for bug in ("kornia-2791", "torchvision-8855"):
        expected = "reproduced" if affected_status(registry[bug]).affected else "fixed"
        assert (verdicts[bug]["verdict"], verdicts[bug]["evidence"]) == (expected, "simulated"), verdicts[bug]
    assert verdicts["torchvision-8587"]["verdict"] in ("skipped", "inconclusive"), verdicts["torchvision-8587"]
    assert all(test["properties"].get("evidence") != "direct" for test in document["tests"])
    nvjpeg = [test for test in document["tests"] if "torchvision_8587" in test["nodeid"] and "[cuda:" in test["nodeid"]]
    assert nvjpeg and all(test["outcome"] == "skipped" for test in nvjpeg), [(t["nodeid"], t["outcome"]) for t in nvjpeg]
    assert any("nvJPEG" in test["message"] for test in nvjpeg)


@pytest.mark.parametrize("gpus", [1, 2])
def test_the_default_run_on_the_runner(gpus: int, tmp_path: Path) -> None:
    done = pytest_on_the_runner(gpus, tmp_path, *SELECTED.split())
    assert done.returncode == 0, failures(done)
    assert f"simcuda: simulated {gpus}-GPU runner: no real GPU" in done.stdout  # the header
    check_a_runner_report(tmp_path, gpus)


def workflow_step(words: list[str], gpus: int, report_dir: Path) -> list[str]:
    """A workflow step's pytest words as tox runs them for the `current` environment: its shared
    options and GPU count filled in, its reports written under `report_dir` (the checkout stays
    as it was)."""
    workflow = load_workflow()
    values = {"$HARNESS_GPU_OPTIONS": workflow["jobs"]["regression"]["env"]["HARNESS_GPU_OPTIONS"], "$GPU_COUNT": str(gpus)}
    expanded = [part for word in words for part in (shlex.split(values[word]) if word in values else [word])]
    kept = [word for word in expanded if not word.startswith("--report-dir=")]
    return [word.replace("$GPU_COUNT", str(gpus)) for word in kept] + [f"--report-dir={report_dir}"]


@pytest.mark.parametrize("gpus", [1, 2])
def test_both_workflow_steps_on_the_runner(gpus: int, tmp_path: Path) -> None:
    """torchvision-9606's GPU test is isolated in the serial step: pytest-isolated's child must
    inherit the runner (without it the child sees no GPU and skips saying so)."""
    parallel, serial = parallel_and_serial_steps(load_workflow())
    selected = "--bug kornia-2791 --bug torchvision-9606"
    for name, words in (("parallel", parallel), ("serial", serial)):
        step = workflow_step(words, gpus, tmp_path / name)
        done = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *step], runner_env(gpus, PYTEST_ADDOPTS=selected))
        assert done.returncode == 0, f"{name}: {failures(done)}"
    parallel_document = json.loads((tmp_path / "parallel" / "results.json").read_text())
    workers = parallel_document["environment"]["workers"]
    assert sorted(seen["cuda_visible_devices"] for seen in workers.values()) == [str(index) for index in range(gpus)]  # xdist pinning ran
    serial_document = json.loads((tmp_path / "serial" / "results.json").read_text())
    visible = tuple(f"[cuda:{index}" for index in range(gpus))
    isolated = [test for test in serial_document["tests"] if "torchvision_9606" in test["nodeid"] and any(gpu in test["nodeid"] for gpu in visible)]
    assert isolated and all("nvJPEG" in test["message"] for test in isolated), [(t["nodeid"], t["message"]) for t in isolated]
    verdict = next(v for v in serial_document["verdicts"] if v["bug_id"] == "kornia-2791")
    if gpus == 2:  # its cuda:1 tests decide in the serial step
        assert verdict["evidence"] == "simulated" and verdict["verdict"] in ("reproduced", "fixed"), verdict
    else:  # as on a real one-GPU runner: nothing of it is left to the serial step
        assert verdict["verdict"] == "skipped", verdict


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


@pytest.mark.parametrize("gpus", [1, 2])
def test_acceptance_on_the_runner_is_kept_outside_reports_observed(gpus: int, tmp_path: Path) -> None:
    before = sorted(OBSERVED_ROOT.rglob("*"))
    done = run([sys.executable, "-m", "reports", "acceptance", "--out", str(tmp_path)], runner_env(gpus, PYTEST_ADDOPTS=SELECTED))
    assert done.returncode == 0, failures(done)
    (folder,) = tmp_path.iterdir()
    assert folder.name.endswith("simcuda-simulated-gpu-no-real-gpu" + ("-x2" if gpus == 2 else ""))
    assert "a rehearsal on the simulated runner, no GPU evidence" in done.stdout
    for step in ("parallel", "serial"):
        document = json.loads((folder / step / "results.json").read_text())
        assert document["environment"]["simulated_runner"] == f"simulated {gpus}-GPU runner: no real GPU"
        assert all(test["properties"].get("evidence") != "direct" for test in document["tests"])
    registry = load_registry()
    combined = (folder / "summary.txt").read_text().split("[combined]", 1)[1]
    for bug in ("kornia-2791", "torchvision-8855"):
        expected = "reproduced" if affected_status(registry[bug]).affected else "fixed"
        assert f"{bug:<17} {expected:<15}" in combined, combined
    assert not any(line.split()[1] in ("fixed", "reproduced", "regressed") for line in combined.splitlines() if "torchvision-8587" in line), combined
    assert sorted(OBSERVED_ROOT.rglob("*")) == before


def test_reports_observed_never_receives_a_runner_run() -> None:
    assert acceptance_root(None, simulated_runner=False) == OBSERVED_ROOT
    with pytest.raises(ValueError, match="reports/observed/ keeps real-GPU runs only"):
        acceptance_root(OBSERVED_ROOT / "2026-11-25-x", simulated_runner=True)
    assert not acceptance_root(None, simulated_runner=True).is_relative_to(OBSERVED_ROOT)


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
