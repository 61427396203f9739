"""`python -m reports acceptance` cannot run here (no GPU): its commands, folder name and summary
are checked as data, and the whole command end to end with a faked GPU count and faked pytest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from reports.__main__ import main
from reports.acceptance.gpus import ASK, visible_gpu_names
from reports.acceptance.steps import CONFORMANCE_TESTS, PARALLEL_MARKERS, SERIAL_MARKERS, acceptance_steps, observed_folder
from reports.acceptance.summary import WORSE_FIRST, combined_lines, conformance_lines, summary_lines, worse
from reports.run.results import results_document
from tests.conftest import REPO
from tests.runner.test_report_workflow import load_workflow, marker_expression, parallel_and_serial_steps


def test_steps_select_like_the_workflow_and_use_one_worker_per_gpu(tmp_path: Path) -> None:
    parallel, serial, conformance = acceptance_steps("python", 2, tmp_path)
    workflow_parallel, workflow_serial = parallel_and_serial_steps(load_workflow())
    assert (PARALLEL_MARKERS, SERIAL_MARKERS) == (marker_expression(workflow_parallel), marker_expression(workflow_serial))
    assert parallel.command[parallel.command.index("-n") + 1] == "2" and "-n" not in serial.command
    for step in (parallel, serial):
        command = list(step.command)
        assert command[:4] == ["python", "-m", "pytest", "suites"]
        assert {"--require-gpu", "--strict-sweeps"} <= set(command)
        assert command[command.index("--device") + 1] == "cuda"  # every visible GPU
        assert command[-1] == f"--report-dir={tmp_path / step.name}"
    assert list(conformance.command) == [
        "python", "-m", "pytest", CONFORMANCE_TESTS, "-p", "no:cacheprovider", f"--report-dir={tmp_path / 'conformance'}"
    ]
    assert (REPO / CONFORMANCE_TESTS).is_file() and dict(conformance.environment) == {"PYTEST_ADDOPTS": ""}
    assert (parallel.judges_bugs, serial.judges_bugs, conformance.judges_bugs) == (True, True, False)
    with pytest.raises(ValueError, match="needs a visible GPU"):
        acceptance_steps("python", 0, tmp_path)


def test_observed_folder_is_named_by_date_and_gpu_model() -> None:
    root = REPO / "reports" / "observed"  # wherever the command is started from
    assert observed_folder("2026-11-22", ["NVIDIA H100 80GB HBM3"]) == root / "2026-11-22-nvidia-h100-80gb-hbm3"
    assert observed_folder("2026-11-22", ["NVIDIA H100 80GB HBM3"] * 2) == root / "2026-11-22-nvidia-h100-80gb-hbm3-x2"
    assert observed_folder("2026-11-22", ["Tesla T4", "NVIDIA A100-SXM4-40GB"]).name == "2026-11-22-tesla-t4+nvidia-a100-sxm4-40gb-x2"


def results(exit_status: int = 1, tv_9606: str = "reproduced") -> dict:
    verdicts = [
        {
            "bug_id": "torchvision-9606", "verdict": tv_9606, "evidence": "direct", "detail": "cuda:0 3/200 iterations",
            "package": "torchvision", "installed": "0.21.0",
        },
        {"bug_id": "sam2-460", "verdict": "skipped", "evidence": None, "detail": "sam2 not installed", "package": "sam2", "installed": None},
    ]
    tests = [
        {
            "nodeid": "a[cuda:0]", "outcome": "xfailed", "message": "",
            "properties": {"known_bug": "torchvision-9606", "gpu": "0: NVIDIA H100 (GPU-aa)"},
        },
        {
            "nodeid": "a[cuda:1]", "outcome": "xfailed", "message": "",
            "properties": {"known_bug": "torchvision-9606", "gpu": "1: NVIDIA H100 (GPU-bb)"},
        },
        {"nodeid": "a[cpu]", "outcome": "passed", "message": "", "properties": {"known_bug": "torchvision-9606"}},
    ]
    return results_document(
        started="s", finished="f", exit_status=exit_status, environment={"packages": {}}, verdicts=verdicts, tests=tests, sections={}
    )


def test_summary_names_verdict_evidence_and_the_gpus_each_bug_ran_on() -> None:
    assert summary_lines("serial", results()) == [
        "[serial] exit status 1",
        "  torchvision-9606  reproduced      direct  GPUs: 0: NVIDIA H100 (GPU-aa), 1: NVIDIA H100 (GPU-bb) | cuda:0 3/200 iterations",
        "  sam2-460          skipped         -       GPUs: no GPU test ran | sam2 not installed",
    ]


def answering_gpu_names(names: list[str], pytest_run=None):
    """subprocess.run for the acceptance command: the child that lists the GPUs answers `names`;
    any other command goes to `pytest_run`."""

    def run(command, check, cwd=None, **kwargs):
        if command[1:3] == ["-c", ASK]:
            return subprocess.CompletedProcess(command, 0, stdout=json.dumps(names) + "\n", stderr="")
        return pytest_run(command, check=check, cwd=cwd, env=kwargs.get("env"))

    return run


def test_acceptance_without_a_gpu_is_one_line(capsys, monkeypatch) -> None:
    monkeypatch.setattr(subprocess, "run", answering_gpu_names([]))
    assert main(["acceptance"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: the acceptance run needs a visible GPU; torch.cuda.device_count() is 0"
    ]


def test_a_bad_race_budget_is_one_line_before_any_step_runs(capsys, monkeypatch) -> None:
    monkeypatch.setattr(subprocess, "run", answering_gpu_names(["NVIDIA H200"], pytest_run=None))
    assert main(["acceptance", "--race-budget", "abc"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --race-budget: 'abc' is not a positive count (20) or time (90s)"
    ]


def fake_acceptance(monkeypatch, tmp_path: Path, crashed: str | None = None) -> list[list[str]]:
    """Two faked GPUs and a faked pytest run from elsewhere than the checkout, writing under
    tmp_path/observed; the step named `crashed` exits 1 leaving no results.json."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("reports.acceptance.steps.OBSERVED_ROOT", tmp_path / "observed")
    ran: list[list[str]] = []

    def fake_pytest(command, check, cwd, env):
        assert cwd == REPO  # `suites` is relative to it
        assert env["PYTEST_ADDOPTS"] == "" if command[-1].endswith("conformance") else env == os.environ
        ran.append(list(command))
        if crashed and command[-1].endswith(crashed):
            return subprocess.CompletedProcess(command, 1)
        report_dir = Path(command[-1].removeprefix("--report-dir="))
        report_dir.mkdir(parents=True)
        (report_dir / "results.json").write_text(json.dumps(results(exit_status=0)))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", answering_gpu_names(["NVIDIA H100 80GB HBM3"] * 2, fake_pytest))
    return ran


def test_a_child_that_cannot_list_the_gpus_is_one_line(capsys, monkeypatch) -> None:
    failed = subprocess.CompletedProcess([], 1, stdout="", stderr="Traceback ...\nRuntimeError: The NVIDIA driver on your system is too old\n")
    monkeypatch.setattr(subprocess, "run", lambda command, **kwargs: failed)
    assert main(["acceptance"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: the GPUs could not be listed: RuntimeError: The NVIDIA driver on your system is too old"
    ]


def test_the_child_lists_what_this_machine_shows() -> None:
    """The real child, run here: on a CPU machine an empty list, on a GPU runner the names."""
    assert visible_gpu_names(sys.executable) == [torch.cuda.get_device_name(index) for index in range(torch.cuda.device_count())]


def test_acceptance_end_to_end_with_two_faked_gpus(capsys, monkeypatch, tmp_path: Path) -> None:
    ran = fake_acceptance(monkeypatch, tmp_path)
    assert main(["acceptance", "--race-budget", "5,10s"]) == 0
    assert [marker_expression(command[3:]) for command in ran[:2]] == [PARALLEL_MARKERS, SERIAL_MARKERS]  # after `python -m pytest`
    assert ran[2][3] == CONFORMANCE_TESTS and not any("race-budget" in word for word in ran[2])
    assert all("--race-budget=5,10s" in command for command in ran[:2])
    folder = next((tmp_path / "observed").iterdir())
    assert folder.name.endswith("-nvidia-h100-80gb-hbm3-x2")
    summary = (folder / "summary.txt").read_text()
    assert "[parallel] exit status 0" in summary and "[serial] exit status 0" in summary
    assert summary.splitlines()[-1] == "[conformance] exit status 0: 1 passed, 2 xfailed"  # after the combined lines
    assert "GPUs: 0: NVIDIA H100 (GPU-aa), 1: NVIDIA H100 (GPU-bb)" in capsys.readouterr().out



def test_the_parent_never_starts_cuda_before_the_steps(capsys, monkeypatch, tmp_path: Path) -> None:
    """On a runner in exclusive-process compute mode a GPU serves one process's context at a time:
    a parent that asked torch for the GPUs' names would hold them, and every step's pytest would
    find its GPU busy. Any use of torch.cuda in the parent fails this test."""
    ran = fake_acceptance(monkeypatch, tmp_path)

    def cuda_started(*args, **kwargs):
        raise AssertionError("the acceptance parent called torch.cuda")

    for name in ("device_count", "get_device_name", "get_device_properties", "get_device_capability", "_lazy_init", "init", "is_available"):
        monkeypatch.setattr(torch.cuda, name, cuda_started)
    assert main(["acceptance"]) == 0
    assert [command[1:3] for command in ran] == [["-m", "pytest"]] * 3
    assert "GPUs: NVIDIA H100 80GB HBM3, NVIDIA H100 80GB HBM3" in capsys.readouterr().out


@pytest.mark.parametrize("crashed", ["parallel", "serial"])
def test_a_step_that_left_no_results_keeps_the_other_steps_summary(crashed: str, capsys, monkeypatch, tmp_path: Path) -> None:
    fake_acceptance(monkeypatch, tmp_path, crashed=crashed)
    assert main(["acceptance"]) == 1
    other = "serial" if crashed == "parallel" else "parallel"
    summary = next((tmp_path / "observed").iterdir()).joinpath("summary.txt").read_text().splitlines()
    assert f"[{other}] exit status 0" in summary
    assert any(line.startswith(f"[{crashed}] no results.json (crashed?): ") for line in summary)
    assert "  torchvision-9606  error           " in "\n".join(summary)  # the crashed step decides nothing
    assert summary == capsys.readouterr().out.splitlines()[3:-1]  # printed too, after the three `$ pytest` lines


def test_a_conformance_step_that_left_no_results_decides_no_bug(capsys, monkeypatch, tmp_path: Path) -> None:
    fake_acceptance(monkeypatch, tmp_path, crashed="conformance")
    assert main(["acceptance"]) == 1
    summary = next((tmp_path / "observed").iterdir()).joinpath("summary.txt").read_text().splitlines()
    assert summary[-1].startswith("[conformance] no results.json (crashed?): ")
    assert "  torchvision-9606  reproduced      (parallel reproduced, serial reproduced)" in summary  # no error charged to a bug


def test_the_conformance_lines_name_each_failure_and_why_tests_skipped() -> None:
    tests = [
        {"nodeid": "t[a-racy]", "outcome": "failed", "message": "assert True == False"},
        {"nodeid": "t[a-ordered]", "outcome": "passed", "message": ""},
        {"nodeid": "t[b-racy]", "outcome": "skipped", "message": "needs a real CUDA GPU"},
        {"nodeid": "t[b-ordered]", "outcome": "skipped", "message": "needs a real CUDA GPU"},
    ]
    document = results_document(started="s", finished="f", exit_status=1, environment={"packages": {}}, verdicts=[], tests=tests, sections={})
    assert conformance_lines("conformance", document) == [
        "[conformance] exit status 1: 1 failed, 1 passed, 2 skipped",
        "  failed: t[a-racy] | assert True == False",
        "  skipped: needs a real CUDA GPU",
    ]


@pytest.mark.parametrize(
    ("verdicts", "combined"),
    [
        (["fixed", "reproduced"], "reproduced"),
        (["reproduced", "not-reproduced"], "reproduced"),  # a race seen in one step only
        (["skipped", "fixed"], "fixed"),
        (["inconclusive", "skipped"], "inconclusive"),
        (["regressed", "error"], "error"),
        (["fixed", "regressed"], "regressed"),
        (["error", "some-future-verdict"], "some-future-verdict"),  # unknown: worst, to be looked at
    ],
)
def test_the_worse_verdict_wins(verdicts: list[str], combined: str) -> None:
    assert worse(verdicts) == worse(verdicts[::-1]) == combined


def test_the_order_names_every_verdict_the_plugin_gives() -> None:
    from fixtures.known_bugs.verdicts import VERDICTS

    assert sorted(WORSE_FIRST) == sorted(VERDICTS)


def test_combined_lines_one_per_bug_over_both_steps() -> None:
    documents = {"parallel": results(tv_9606="fixed"), "serial": results(tv_9606="regressed")}
    assert combined_lines(documents) == [
        "[combined] the worse verdict of the steps",
        "  torchvision-9606  regressed       (parallel fixed, serial regressed)",
        "  sam2-460          skipped         (parallel skipped, serial skipped)",
    ]
    assert combined_lines({"parallel": results(tv_9606="fixed"), "serial": None}) == [
        "[combined] the worse verdict of the steps; serial: no results.json, counted as error",
        "  torchvision-9606  error           (parallel fixed, serial error)",
        "  sam2-460          error           (parallel skipped, serial error)",
    ]


def test_a_race_seen_in_one_step_only_is_reproduced_in_the_combined_line() -> None:
    """GPU-runner rehearsal (issue 19, prediction 5): torchvision-9606 is a race; the xdist step
    saw it (reproduced), the serial step's iterations did not (not-reproduced, which a race's
    budget allows). A sighting is a sighting: the combined line must say reproduced."""
    documents = {"parallel": results(tv_9606="reproduced"), "serial": results(tv_9606="not-reproduced")}
    assert combined_lines(documents)[1] == "  torchvision-9606  reproduced      (parallel reproduced, serial not-reproduced)"


def test_the_conformance_step_clears_what_changes_its_meaning(tmp_path: Path) -> None:
    *_, conformance = acceptance_steps("python", 1, tmp_path)
    base = {"CUDA_LAUNCH_BLOCKING": "1", "PYTORCH_NO_CUDA_MEMORY_CACHING": "0", "PYTEST_ADDOPTS": "--bug kornia-2791", "HOME": "/root"}
    assert conformance.environment_from(base) == {"PYTEST_ADDOPTS": "", "HOME": "/root"}
    parallel, serial, _ = acceptance_steps("python", 1, tmp_path)
    assert parallel.environment_from(base) == base == serial.environment_from(base)  # the bug steps run as the runner is set


def test_the_combined_line_says_which_bugs_too_few_gpus_left_undecided() -> None:
    def step(verdict: str, detail: str, tests: list[dict]) -> dict:
        return {"verdicts": [{"bug_id": "kornia-2791", "verdict": verdict, "detail": detail}], "tests": tests}

    skipped = {
        "nodeid": "t[cuda:1]", "outcome": "skipped", "message": "cuda:1 requested, 1 CUDA device visible",
        "properties": {"known_bug": "kornia-2791"},
    }
    lines = combined_lines(
        {"parallel": step("fixed", "4 test(s)", []), "serial": step("skipped", "cuda:1 requested, 1 CUDA device visible", [skipped])}
    )
    assert lines[1] == (
        "  kornia-2791       fixed           (parallel fixed, serial skipped); UNDECIDED on too few GPUs: cuda:1 requested, 1 CUDA device visible"
    )
    assert "UNDECIDED" not in combined_lines({"parallel": step("fixed", "4 test(s)", [])})[1]
