"""Crashes, hangs and poisoned CUDA contexts do not lose the run or blame the wrong test."""

from __future__ import annotations

import json

import pytest
import torch

CRASH_AND_HANG = """
import ctypes, sys, time, pytest

@pytest.mark.known_bug("kornia-2791", evidence="proxy")  # a crash is charged to its bug
@pytest.mark.isolated
def test_segfault():
    print("printed before the crash", file=sys.stderr, flush=True)
    ctypes.string_at(0)

@pytest.mark.isolated(timeout=1)
def test_hang():
    print("printed before the hang", file=sys.stderr, flush=True)
    time.sleep(120)

def test_still_runs():
    pass
"""


@pytest.mark.catches(
    "reports/run/plugin_results.py::RunRecords.pytest_runtest_logreport",
    "reports/run/plugin_results.py::ResultsWriter.pytest_sessionfinish",
)
def test_fault_segfault_and_hang_in_isolated_tests_are_attributed_and_the_run_completes(harness, tmp_path) -> None:
    harness.makepyfile(CRASH_AND_HANG)
    result = harness.runpytest_subprocess(f"--report-dir={tmp_path}", "-rA")
    result.assert_outcomes(passed=1, failed=2)
    output = result.stdout.str()
    assert "signal 11" in output and "printed before the crash" in output
    assert "timed out after 1 seconds" in output
    tests = {t["nodeid"].split("::")[-1]: t for t in json.loads((tmp_path / "results.json").read_text())["tests"]}
    assert {name: t["outcome"] for name, t in tests.items()} == {
        "test_segfault": "failed",
        "test_hang": "failed",
        "test_still_runs": "passed",
    }
    assert (tmp_path / "report.html").exists()
    assert crash_verdict(tmp_path) == ("error", "crashed")


CRASH_UNDER_XDIST = """
import ctypes, time, pytest

@pytest.mark.known_bug("kornia-2791", evidence="proxy")  # a crash is charged to its bug
def test_segfault():
    ctypes.string_at(0)

@pytest.mark.timeout(1)
def test_hang():
    time.sleep(120)

@pytest.mark.parametrize("n", range(4))
def test_others(n):
    pass
"""


@pytest.mark.catches(
    "reports/run/plugin_results.py::RunRecords.pytest_runtest_logreport",
    "reports/run/plugin_results.py::ResultsWriter.pytest_sessionfinish",
)
def test_fault_segfault_and_hang_under_xdist_restart_the_worker_and_keep_the_report(harness, tmp_path) -> None:
    # pytest-timeout's thread method, as pyproject.toml sets it, ends the hung worker process;
    # xdist then blames the running test and starts a fresh worker.
    harness.makepyfile(CRASH_UNDER_XDIST)
    result = harness.runpytest_subprocess("-n", "2", f"--report-dir={tmp_path}", "-o", "timeout_method=thread")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running*test_segfault*"])
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running*test_hang*"])
    tests = {t["nodeid"].split("::")[-1]: t["outcome"] for t in json.loads((tmp_path / "results.json").read_text())["tests"]}
    assert (tests["test_segfault"], tests["test_hang"]) == ("failed", "failed")
    assert crash_verdict(tmp_path) == ("error", "crashed")


SETUP_CRASH = """
import os, signal, pytest

@pytest.fixture
def dies():
    os.kill(os.getpid(), signal.SIGKILL)

@pytest.mark.known_bug("kornia-2791", evidence="proxy")
def test_dies_in_setup(dies):
    pass

@pytest.mark.known_bug("kornia-2791", evidence="proxy")
def test_clean():
    pass
"""


def test_a_worker_that_dies_in_a_tests_setup_charges_the_bug_of_the_tests_folder(harness, tmp_path) -> None:
    """No report of that test reached the controller before the crash, so nothing but its suite
    folder names its bug: without that the clean test alone decided (`fixed`)."""
    folder = harness.path / "suites" / "kornia_2791_crash"
    folder.mkdir(parents=True)
    (folder / "test_setup_crash.py").write_text(SETUP_CRASH)
    result = harness.runpytest_subprocess("-n", "2", f"--report-dir={tmp_path}", "suites")
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running*test_dies_in_setup*"])
    assert crash_verdict(tmp_path) == ("error", "crashed")


def crash_verdict(report_dir) -> tuple[str, str]:
    """kornia-2791's verdict in a session whose only test of it crashed, and its detail's first word
    after the count: a crash is an error of its bug, never silence."""
    record = next(v for v in json.loads((report_dir / "results.json").read_text())["verdicts"] if v["bug_id"] == "kornia-2791")
    return record["verdict"], record["detail"].partition(": ")[2].split(":")[0]


DIES_AFTER_A_TEST = """
import os, pytest

@pytest.fixture
def dies_in_teardown():
    yield
    os._exit(139)

@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.isolated(group="one child")
def test_first(dies_in_teardown):
    pass

@pytest.mark.known_bug("kornia-2791", evidence="proxy")
@pytest.mark.isolated(group="one child")
def test_second():
    raise RuntimeError("never ran: it would have errored")
"""


def test_an_isolated_child_that_dies_between_tests_charges_their_bug(harness, tmp_path) -> None:
    """The child died in the first test's teardown: pytest-isolated reported no failure, and the
    second test never reported at all. The first test's clean call alone read `fixed`, exit 0."""
    harness.makepyfile(DIES_AFTER_A_TEST)
    result = harness.runpytest_subprocess(f"--report-dir={tmp_path}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert crash_verdict(tmp_path) == ("error", "never reported its end")


STICKY = """
import pytest

def test_poisons(device):
    if device == "cuda:0":
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

def test_later(device):
    pass
"""


@pytest.mark.catches(
    "fixtures/devices/plugin.py::pytest_runtest_makereport",
    "fixtures/devices/cuda_health.py::sticky_cuda_error",
)
def test_fault_sticky_cuda_error_stops_later_gpu_tests_in_the_process(harness, monkeypatch) -> None:
    # Simulated: one visible GPU, and a test body that raises torch's text for a sticky error.
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    harness.makepyfile(STICKY)
    result = harness.runpytest("--device", "cpu,cuda:0", "-rs")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*CUDA context unusable in this process since *test_poisons?cuda:0? hit a sticky error (an illegal memory access was encountered)*"]
    )


STATE_CHANGER = """
import random
import numpy as np
import torch

def test_a_changes_everything():
    random.seed(1); np.random.seed(1); torch.manual_seed(1)
    torch.set_default_dtype(torch.float64)
    torch.set_default_device("meta")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = not torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = not torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
    torch.backends.cudnn.deterministic = not torch.backends.cudnn.deterministic
"""


@pytest.fixture
def inductor_imported() -> None:
    """The deterministic-mode setter imports torch._inductor and torch._dynamo (~900 modules, one of
    which registers a C++ operator library). Imported first inside the in-process session, pytester
    would drop them from sys.modules afterwards, and the next import in this process (a meta
    `isfinite` reaches torch._dynamo) would register that library twice and fail. Requested before
    `harness`: pytester takes its sys.modules snapshot when its fixture is set up, not when it runs."""
    torch.use_deterministic_algorithms(torch.are_deterministic_algorithms_enabled())


@pytest.mark.catches(
    "fixtures/determinism/plugin.py::seeded_rng",
    "fixtures/determinism/torch_state.py::seeded_and_restored",
)
def test_fault_a_test_that_changes_global_state_leaves_none_behind(inductor_imported, harness) -> None:
    import random

    import numpy as np

    from fixtures.determinism.torch_state import current_flags

    before = current_flags(), random.getstate(), np.random.get_state()[1].tolist(), torch.get_rng_state()
    harness.makepyfile(STATE_CHANGER)
    harness.runpytest().assert_outcomes(passed=1)
    after = current_flags(), random.getstate(), np.random.get_state()[1].tolist(), torch.get_rng_state()
    assert after[:3] == before[:3]
    assert torch.equal(after[3], before[3])


def test_every_flag_is_put_back_even_when_an_rng_state_cannot_be(monkeypatch) -> None:
    """A GPU runner's CUDA states that cannot be restored (the review's 16-byte Philox states fed
    to the CPU generator) must not leave the test's dtype, threads or TF32 flags behind."""
    from fixtures.determinism import torch_state

    def refuse(states: tuple) -> None:
        raise RuntimeError("Expected a CPUGeneratorImplState of size 5056 but found the input RNG state size to be 16")

    monkeypatch.setattr(torch_state, "_restore_rng_states", refuse)
    before = torch_state.current_flags()
    with pytest.raises(RuntimeError, match="size to be 16"), torch_state.seeded_and_restored(7):
        torch.set_default_dtype(torch.float64)
        torch.set_num_threads(1)
    assert torch_state.current_flags() == before


def test_the_seed_reaches_every_generator_a_test_can_draw_from(monkeypatch) -> None:
    """The CPU generator, and inside a simulation (where CUDA has started) the simulated CUDA
    generators, as torch.manual_seed seeds them, without formatting a Python stack for seeds that
    cannot apply (torch.manual_seed formats one for each accelerator kind the build knows)."""
    import traceback

    from fixtures.determinism.torch_state import seed_torch
    from simcuda import simulated_cuda

    formatted = []
    monkeypatch.setattr(traceback, "format_stack", lambda *args: formatted.append(args) or [])

    def seed_torch_then_draw(device: str) -> list:
        torch.manual_seed(11)
        expected = torch.rand(4, device=device).cpu()
        torch.manual_seed(0)  # elsewhere, so a seed that does not arrive shows
        formatted.clear()
        seed_torch(11)
        assert torch.equal(torch.rand(4, device=device).cpu(), expected), device
        return formatted.copy()

    assert seed_torch_then_draw("cpu") == [] or torch.accelerator.is_available()
    with simulated_cuda(2):
        assert seed_torch_then_draw("cuda:0") == [] and seed_torch_then_draw("cuda:1") == []


ISOLATED_FAILURE_WITH_EVIDENCE = """
import pytest, torch

@pytest.mark.isolated(timeout=120)
def test_isolated_failure(attach_image):
    attach_image("decoded frame", torch.zeros(3, 8, 8, dtype=torch.uint8))
    assert 1 + 1 == 3, "frame 3 differs from its source"
"""


@pytest.mark.catches("fixtures/evidence/plugin.py::pytest_runtest_logreport")
def test_fault_an_isolated_failure_keeps_its_message_and_images(harness, tmp_path) -> None:
    """Without the unpacking, results.json's message is the traceback's first line and the
    evidence image never reaches the report."""
    harness.makepyfile(ISOLATED_FAILURE_WITH_EVIDENCE)
    result = harness.runpytest_subprocess(f"--report-dir={tmp_path}", "-rA")
    result.assert_outcomes(failed=1)
    (record,) = json.loads((tmp_path / "results.json").read_text())["tests"]
    assert record["message"].startswith("AssertionError: frame 3 differs from its source")
    assert "harness_isolated_report" not in record["properties"]
    assert "decoded frame" in (tmp_path / "report.html").read_text()
