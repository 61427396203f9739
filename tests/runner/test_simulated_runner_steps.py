"""A GPU runner's day on the simulated runner, part two: the GPU workflow's two steps with their
command lines as written, on two GPUs (what tox runs for them: xdist workers pinned one per GPU,
then the serial step whose isolated tests run in pytest-isolated's children, which must inherit the
runner), and `python -m reports acceptance` with one GPU and with two (its steps: the workflow's
markers and one worker per GPU on `--device cuda`, narrowed with --bug through PYTEST_ADDOPTS, then
the conformance step, which is not). On one GPU the split is checked through acceptance's steps:
one pinned worker, the isolated child on the runner, nothing of kornia-2791 left to the serial step."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from reports.acceptance.steps import OBSERVED_ROOT
from tests.helpers.simulated_runner import DECIDED, SELECTED, expected_verdict, failures, run, runner_env
from tests.runner.test_report_workflow import load_workflow, parallel_and_serial_steps


def workflow_step(words: list[str], gpus: int, report_dir: Path) -> list[str]:
    """A workflow step's pytest words as tox runs them for the `current` environment: its shared
    options and GPU count filled in, its reports written under `report_dir` (the checkout stays
    as it was)."""
    workflow = load_workflow()
    values = {"$HARNESS_GPU_OPTIONS": workflow["jobs"]["regression"]["env"]["HARNESS_GPU_OPTIONS"], "$GPU_COUNT": str(gpus)}
    expanded = [part for word in words for part in (shlex.split(values[word]) if word in values else [word])]
    kept = [word for word in expanded if not word.startswith("--report-dir=")]
    return [word.replace("$GPU_COUNT", str(gpus)) for word in kept] + [f"--report-dir={report_dir}"]


# kornia-2791's cuda:1 tests run in the serial step; torchvision-9606's GPU test is isolated there.
SPLIT_BUGS = "--bug kornia-2791 --bug torchvision-9606"


def check_the_steps_split(parallel: dict, serial: dict, gpus: int) -> None:
    """The parallel step's xdist workers pinned one per GPU; torchvision-9606's isolated test ran on
    each GPU in a pytest-isolated child that inherited the runner (without it the child sees no GPU
    and skips saying so, not for nvJPEG); kornia-2791's cuda:1 tests decide in the serial step on
    two GPUs, and on one (as on a real one-GPU runner) nothing of it is left there."""
    workers = parallel["environment"]["workers"]
    assert sorted(seen["cuda_visible_devices"] for seen in workers.values()) == [str(index) for index in range(gpus)]
    visible = tuple(f"[cuda:{index}]" for index in range(gpus))
    isolated = [test for test in serial["tests"] if "torchvision_9606" in test["nodeid"] and test["nodeid"].endswith(visible)]
    assert len(isolated) == gpus and all("nvJPEG" in test["message"] for test in isolated), [(t["nodeid"], t["message"]) for t in isolated]
    children = serial["timings"]["isolated_children"]  # one child per test file and GPU, timed apart from its tests
    assert children["count"] == gpus and children["process_start_and_exit_s"] > 0, serial["timings"]
    verdict = next(v for v in serial["verdicts"] if v["bug_id"] == "kornia-2791")
    if gpus == 2:
        assert verdict["evidence"] == "simulated" and verdict["verdict"] in ("reproduced", "fixed"), verdict
    else:
        assert verdict["verdict"] == "skipped", verdict


@pytest.mark.runner_day  # `pytest tests --runner-day` (tests/conftest.py)
def test_both_workflow_steps_on_the_runner(tmp_path: Path) -> None:
    gpus = 2
    parallel, serial = parallel_and_serial_steps(load_workflow())
    for name, words in (("parallel", parallel), ("serial", serial)):
        step = workflow_step(words, gpus, tmp_path / name)
        done = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *step], runner_env(gpus, PYTEST_ADDOPTS=SPLIT_BUGS))
        assert done.returncode == 0, f"{name}: {failures(done)}"
    documents = {name: json.loads((tmp_path / name / "results.json").read_text()) for name in ("parallel", "serial")}
    check_the_steps_split(documents["parallel"], documents["serial"], gpus)


@pytest.mark.runner_day  # `pytest tests --runner-day` (tests/conftest.py)
@pytest.mark.parametrize("gpus", [1, 2])
def test_acceptance_on_the_runner_is_kept_outside_reports_observed(gpus: int, tmp_path: Path) -> None:
    before = sorted(OBSERVED_ROOT.rglob("*"))
    selected = f"{SELECTED} --bug torchvision-9606"  # kornia-2791 is in both
    done = run([sys.executable, "-m", "reports", "acceptance", "--out", str(tmp_path)], runner_env(gpus, PYTEST_ADDOPTS=selected))
    assert done.returncode == 0, failures(done)
    (folder,) = tmp_path.iterdir()
    assert folder.name.endswith("simcuda-simulated-gpu-no-real-gpu" + ("-x2" if gpus == 2 else ""))
    assert "a rehearsal on the simulated runner, no GPU evidence" in done.stdout
    documents = {step: json.loads((folder / step / "results.json").read_text()) for step in ("parallel", "serial")}
    for document in documents.values():
        assert document["environment"]["simulated_runner"] == f"simulated {gpus}-GPU runner: no real GPU"
        assert all(test["properties"].get("evidence") != "direct" for test in document["tests"])
    check_the_steps_split(documents["parallel"], documents["serial"], gpus)
    combined = (folder / "summary.txt").read_text().split("[combined]", 1)[1]
    for bug in DECIDED:
        assert f"{bug:<17} {expected_verdict(bug):<15}" in combined, combined
    assert f"{'torchvision-8587':<17} {'inconclusive':<15}" in combined, combined
    # The conformance step ran its whole file whatever --bug selected: the simulated twins pass,
    # the real-GPU tests skip naming the runner.
    conformance = combined.split("[conformance]", 1)[1].splitlines()
    assert conformance[0].startswith(" exit status 0: ") and " passed, " in conformance[0] and conformance[0].endswith(" skipped"), conformance
    assert "  skipped: needs a real CUDA GPU: this is the simulated runner (SIMCUDA_RUNNER_GPUS)" in conformance, conformance
    assert sorted(OBSERVED_ROOT.rglob("*")) == before


def test_on_one_gpu_a_simulated_case_never_meets_the_real_devices_tensors(tmp_path: Path) -> None:
    """kornia caches its JPEG tables per device: on a one-GPU machine the real cuda:0 test filled
    them, and the simcuda:0 case after it met the real tensors and read inconclusive (seen on an
    H200 for kornia-2837 and -2867). A simulated cuda:N runs only where no real cuda:N is: the
    simcuda:0 cases skip naming the real GPU, and the bug decides with no inconclusive case."""
    done = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--report-dir={tmp_path}", "--bug", "kornia-2867"], runner_env(1))
    assert done.returncode == 0, failures(done)
    document = json.loads((tmp_path / "results.json").read_text())
    simulated_zero = [test for test in document["tests"] if "[simcuda:0-" in test["nodeid"]]
    assert simulated_zero and all(
        test["outcome"] == "skipped" and "cuda:0 is a real GPU here, whose direct test decides" in test["message"] for test in simulated_zero
    ), [(test["nodeid"], test["outcome"], test.get("message")) for test in simulated_zero]
    assert not [test["nodeid"] for test in document["tests"] if "real CUDA tensor meeting" in (test.get("message") or "")]
    (verdict,) = [v for v in document["verdicts"] if v["bug_id"] == "kornia-2867"]
    assert verdict["verdict"] == expected_verdict("kornia-2867") and "inconclusive" not in verdict["detail"], verdict
