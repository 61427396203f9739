"""What the simulated-runner rehearsals share (tests/test_simulated_runner_*.py): the runner's
environment, a command run from the checkout under it, and the report a real runner is predicted
to give, labelled as the simulated runner's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fixtures.known_bugs.registry import load_registry
from fixtures.known_bugs.versions import affected_status
from fixtures.races.choice import CPU_BUDGET, gpu_choice
from tests.conftest import REPO
from tests.helpers import warm_python

# A conftest printing `seen`, a Python expression, as the session's runs begin (collection over).
SEEN_AFTER_COLLECTION = """
import pytest
import torch

SEEN = {{}}


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    SEEN["after collection"] = {seen}
    return (yield)


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"after collection: {{SEEN['after collection']}}")
"""
BUGS = ("kornia-2791", "kornia-2837", "torchvision-8855", "torchvision-8587")
DECIDED = ("kornia-2791", "kornia-2837", "torchvision-8855")  # the CPU-only run's verdicts, simulated evidence
SELECTED = " ".join(f"--bug {bug}" for bug in BUGS)


def runner_env(gpus: int, **extra: str) -> dict[str, str]:
    environ = {key: value for key, value in os.environ.items() if key not in ("CUDA_VISIBLE_DEVICES", "PYTEST_ADDOPTS")}
    return {**environ, "SIMCUDA_RUNNER_GPUS": str(gpus), **extra}


def run(command: list[str], environ: dict[str, str]) -> subprocess.CompletedProcess:
    return warm_python.run(command, cwd=REPO, env=environ, timeout=900)


def pytest_on_the_runner(gpus: int, report_dir: Path, *arguments: str) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--report-dir={report_dir}", *arguments], runner_env(gpus))


def failures(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR", "error"))]
    return "\n".join(lines)[-3000:] + done.stderr[-2000:]


def expected_verdict(bug: str) -> str:
    """The registry's verdict for the installed release."""
    return "reproduced" if affected_status(load_registry()[bug]).affected else "fixed"


def check_a_runner_report(report_dir: Path, gpus: int) -> None:
    """The verdicts a real runner is predicted to give, labelled as the simulated runner's."""
    document = json.loads((report_dir / "results.json").read_text())
    assert document["environment"]["simulated_runner"] == f"simulated {gpus}-GPU runner: no real GPU"
    assert f"on simulated {gpus}-GPU runner: no real GPU" in (report_dir / "report.html").read_text()
    verdicts = {verdict["bug_id"]: verdict for verdict in document["verdicts"] if verdict["bug_id"] in BUGS}
    for bug in DECIDED:
        assert (verdicts[bug]["verdict"], verdicts[bug]["evidence"]) == (expected_verdict(bug), "simulated"), verdicts[bug]
    nvjpeg_verdict = verdicts["torchvision-8587"]
    assert nvjpeg_verdict["verdict"] == "inconclusive" and "nvJPEG" in nvjpeg_verdict["detail"], nvjpeg_verdict
    assert all(test["properties"].get("evidence") != "direct" for test in document["tests"])
    nvjpeg = [test for test in document["tests"] if "torchvision_8587" in test["nodeid"] and "[cuda:" in test["nodeid"]]
    assert nvjpeg and all(test["outcome"] == "skipped" for test in nvjpeg), [(t["nodeid"], t["outcome"]) for t in nvjpeg]
    assert any("nvJPEG" in test["message"] for test in nvjpeg)
    # The runner's GPUs get a GPU's race budget (no GPU has shown 8587: the unrecorded count), the CPU its own.
    chosen = {test["nodeid"]: test["properties"].get("race_budget") for test in document["tests"]}
    budgets = {nodeid: budget.partition(":")[0] for nodeid, budget in chosen.items() if budget}
    on_gpu = str(gpu_choice("simcuda simulated GPU (no real GPU)", None, []).budget)
    assert budgets == {nodeid: on_gpu if "[cuda:" in nodeid else str(CPU_BUDGET) for nodeid in budgets}
    assert on_gpu in budgets.values() and on_gpu != str(CPU_BUDGET)
