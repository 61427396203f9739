"""bench/simcuda_on_a_gpu.py's own parts, on a machine without a GPU: what it judges in each step's
files, the commands it runs, and its one-line refusals. What it finds on a GPU is its run's."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports.census.junit import Outcome
from simcuda import REAL_CUDA_REACHED
from tests.conftest import REPO, load_script

script = load_script(REPO / "bench" / "simcuda_on_a_gpu.py")
peer_suite = load_script(REPO / "bench" / "simcuda_peer_suite.py")


def test_a_failing_self_test_is_a_finding_a_skip_is_not() -> None:
    outcomes = {
        "tests.simcuda.test_rules::test_fake[copy_]": Outcome("skipped", "needs 2 CUDA devices, 1 visible"),
        "tests.simcuda.test_plugin::test_scripted": Outcome("failure", "AssertionError: assert {'passed': 1}"),
        "tests.simcuda.test_unsupported::test_lazy": Outcome("error", "KeyError"),
        "tests.simcuda.test_rules::test_clean": Outcome("passed"),
    }
    assert script.self_test_findings(outcomes) == [
        "self-test failed: tests.simcuda.test_plugin::test_scripted: AssertionError: assert {'passed': 1}",
        "self-test failed: tests.simcuda.test_unsupported::test_lazy: KeyError",
    ]


def test_a_simulated_case_meeting_a_real_tensor_or_reaching_the_real_cuda_is_a_finding_another_refusal_is_not() -> None:
    results = {"tests": [
        {
            "nodeid": "suites/a.py::test[simcuda:1]",
            "message": "inconclusive: the simulated device cannot run this: a real CUDA tensor meeting simulated ones",
        },
        {"nodeid": "suites/a.py::test[simcuda:0]", "message": "simcuda:0: cuda:0 is a real GPU here, whose direct test decides"},
        {"nodeid": "suites/a.py::test[cuda:0]", "message": None},
        {"nodeid": "suites/b.py::test[simcuda:1]", "message": f"simulated CUDA cannot run this: {REAL_CUDA_REACHED} (the real CUDA started)"},
        {"nodeid": "suites/c.py::test[simcuda:1]", "message": "simulated CUDA cannot run this: nvJPEG (torchvision.io.encode_jpeg on cuda)"},
    ]}
    assert script.main_job_findings(results) == [
        "met a real CUDA tensor: suites/a.py::test[simcuda:1]",
        f"reached the real CUDA: suites/b.py::test[simcuda:1]: simulated CUDA cannot run this: {REAL_CUDA_REACHED} (the real CUDA started)",
    ]


def test_its_steps_are_the_documented_commands(tmp_path: Path) -> None:
    assert script.main_job_command("py", tmp_path) == ["py", "-m", "pytest", "-p", "no:cacheprovider", f"--report-dir={tmp_path}"]
    assert script.self_tests_command("py", tmp_path / "j.xml")[:5] == ["py", "-m", "pytest", "tests/simcuda", "-n"]
    assert script.peer_command("py", "kornia", tmp_path, tmp_path / "o")[2:] == ["kornia", "--tests", str(tmp_path), "--out", str(tmp_path / "o")]


def test_without_a_real_gpu_it_refuses_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import reports.acceptance.gpus

    monkeypatch.setenv("SIMCUDA_RUNNER_GPUS", "1")
    assert script.main([]) == 2
    assert capsys.readouterr().err.startswith("simcuda_on_a_gpu: refused: the simulated runner (SIMCUDA_RUNNER_GPUS) is no real GPU; ")
    monkeypatch.delenv("SIMCUDA_RUNNER_GPUS")
    monkeypatch.setattr(reports.acceptance.gpus, "visible_gpu_names", lambda python: [])
    assert script.main([]) == 2
    assert capsys.readouterr().err == "simcuda_on_a_gpu: refused: no GPU is visible; on a CPU machine `pytest tests/simcuda` checks simcuda\n"


@pytest.mark.parametrize(("value", "message"), [("kornia", "'kornia': give NAME=DIR"), ("kornia=/no/such/dir", "/no/such/dir: no such folder")])
def test_a_bad_peer_is_a_one_line_usage_error(value: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        script.arguments(["--peer", value])
    assert message in capsys.readouterr().err


def test_the_peer_suite_takes_exported_tests_or_a_repository_never_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        peer_suite.main(["kornia", "--repo", str(REPO), "--tests", str(tmp_path)])
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        peer_suite.main(["kornia", "--tests", str(tmp_path / "absent")])
    assert f"--tests: {tmp_path / 'absent'}: no such folder" in capsys.readouterr().err
