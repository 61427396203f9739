"""The real CUDA as a simulation watches it (simcuda/real_cuda.py): read from torch._C where no
stand-in answers, table-tested against faked entries; and, in a `pytest --simcuda` session on a
faked GPU machine, a test whose C++ path starts the real CUDA or allocates on a real device is
refused as on a machine without a GPU, where the same path is the driver's error."""

from __future__ import annotations

import json

import pytest
import torch

from simcuda import Runner, real_cuda, simulated_cuda
from simcuda.real_cuda import RealCudaWatch, change, real_cuda_state


def stats(allocated: int) -> dict:
    """torch._C._cuda_memoryStats's nested layout: the counters read, and one that is not."""
    return {
        "allocation": {"all": {"allocated": allocated, "current": 0, "freed": allocated, "peak": 1}},
        "allocated_bytes": {"all": {"allocated": 512 * allocated, "current": 0, "freed": 512 * allocated, "peak": 512}},
    }


def unstarted(index: int) -> dict:
    raise RuntimeError(f"Invalid device argument {index}: did you call init?")  # the allocator holding no device yet


def never_asked() -> int:
    raise AssertionError("the device count was asked for before CUDA started: the CUDA runtime would start its driver")


@pytest.mark.parametrize(
    ("memory_stats", "device_count", "expected"),
    [
        (None, None, None),  # a build without CUDA
        (unstarted, never_asked, None),  # CUDA not started
        (lambda index: stats([4, 0][index]), lambda: 2, ((4, 2048), (0, 0))),  # started: each device's counters
        (lambda index: {}, lambda: 1, ((0, 0),)),  # an allocator that keeps fewer statistics: nothing grows
    ],
    ids=["no CUDA build", "not started", "started", "no counters"],
)
def test_the_state_read(monkeypatch: pytest.MonkeyPatch, memory_stats, device_count, expected) -> None:
    monkeypatch.setattr(real_cuda, "_MEMORY_STATS", memory_stats)
    monkeypatch.setattr(real_cuda, "_DEVICE_COUNT", device_count)
    assert real_cuda_state() == expected


@pytest.mark.parametrize(
    ("before", "after", "said"),
    [
        (None, None, ""),
        (((2, 1024), (0, 0)), ((2, 1024), (0, 0)), ""),
        (None, ((0, 0),), "the real CUDA started"),
        (((2, 1024), (0, 0)), ((2, 1024), (3, 1536)), "cuda:1: 3 allocation(s), 1536 bytes"),
        (((2, 1024), (0, 0)), ((2, 2048), (1, 8)), "cuda:0: 0 allocation(s), 1024 bytes, cuda:1: 1 allocation(s), 8 bytes"),
        (((2, 1024),), None, "the real CUDA's allocator changed"),  # its statistics gone: a pluggable allocator now
        (((2, 1024),), ((2, 1024), (0, 0)), "the real CUDA's allocator changed"),  # another device count: never a device's count
    ],
)
def test_a_change_in_words(before, after, said: str) -> None:
    assert change(before, after) == said


def test_a_watch_says_each_start_or_allocation_once() -> None:
    states = iter([None, None, ((0, 0),), ((0, 0),), ((3, 1536),), ((3, 1536),)])
    watch = RealCudaWatch(lambda: next(states))
    assert [watch.change() for _ in range(5)] == ["", "the real CUDA started", "", "cuda:0: 3 allocation(s), 1536 bytes", ""]


def test_the_runner_watches_the_real_cuda_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    real = {"started": False}
    monkeypatch.setattr(real_cuda, "_MEMORY_STATS", lambda index: stats(0) if real["started"] else unstarted(index))
    monkeypatch.setattr(real_cuda, "_DEVICE_COUNT", lambda: 1)
    runner = Runner(1, {})
    assert runner.real_cuda_change() == ""  # not running: nothing to watch
    runner.open()
    try:
        real["started"] = True
        assert (runner.real_cuda_change(), runner.real_cuda_change()) == ("the real CUDA started", "")
    finally:
        runner.close()


def test_here_the_real_cuda_is_never_started_and_a_simulation_sees_it_still() -> None:
    """On this machine (no GPU) the real entries answer "not started", inside a simulation too,
    where torch._C's allocator entries are stood in for: nothing simulated reads as real."""
    if torch.cuda.is_available():
        pytest.skip("a machine with a real GPU: its CUDA may have started in this process")
    assert real_cuda_state() is None
    with simulated_cuda() as simulation:
        torch.ones(2, device="cuda:1") + 1
        assert real_cuda_state() is None and simulation.real_cuda.change() == ""


# A GPU machine faked for the session: the real CUDA starts (or allocates on its cuda:0) when a
# test calls what stands for a C++ path the simulation's modes do not see.
FAKED_GPU_CONFTEST = '''
from simcuda import real_cuda

REAL = {"started": False, "allocated": 0}


def memory_stats(index):
    if not REAL["started"]:
        raise RuntimeError(f"Invalid device argument {index}: did you call init?")
    return {"allocation": {"all": {"allocated": REAL["allocated"]}}}


real_cuda._MEMORY_STATS = memory_stats
real_cuda._DEVICE_COUNT = lambda: 1
'''
FAKED_GPU_TESTS = '''
import torch

from conftest import REAL


def test_a_scripted_move_starts_the_real_cuda():
    REAL["started"] = True  # TorchScript's to_dispatch starting CUDA; the op then ran simulated
    assert torch.ones(2, device="cuda").device == torch.device("cuda:1")


def test_a_binding_allocates_on_the_real_gpu():
    REAL["allocated"] += 1  # the real CUDA started in the test before
    assert torch.ones(2, device="cuda").is_cuda


def test_nothing_real():
    assert torch.ones(2, device="cuda").is_cuda


def test_a_bug_of_its_own():
    assert torch.ones(2, device="cuda").sum().item() == 3
'''


def test_on_a_gpu_machine_the_real_cuda_reached_is_the_same_refusal(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKED_GPU_CONFTEST)
    pytester.makepyfile(test_faked_gpu=FAKED_GPU_TESTS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider", "-rsf")
    result.assert_outcomes(passed=1, skipped=2, failed=1)
    result.stdout.fnmatch_lines([
        "SKIPPED * simulated CUDA cannot run this: the real CUDA, reached from C++ where the simulation's modes do not see*"
        "(the real CUDA started)",
        "SKIPPED * simulated CUDA cannot run this: the real CUDA, reached from C++ *(cuda:0: 1 allocation(s), 0 bytes)",
        "FAILED *test_a_bug_of_its_own*",
    ])
    report = json.loads((pytester.path / "simcuda-report.json").read_text())
    assert list(report["refused_by_feature"].values()) == [2], report["refused_by_feature"]


# The same while pytest imports a test module: the real CUDA started by its module-level code (a
# C++ path at import) refuses each of the module's tests; before, they passed.
FAKED_GPU_AT_IMPORT = '''
import torch

from conftest import REAL

REAL["started"] = True  # a scripted move at import starting CUDA; the tensor is made simulated
MOVED = torch.ones(2).to("cuda")


def test_after_the_import():
    assert MOVED.is_cuda
'''


def test_on_a_gpu_machine_the_real_cuda_reached_at_import_refuses_the_modules_tests(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKED_GPU_CONFTEST)
    pytester.makepyfile(test_faked_import=FAKED_GPU_AT_IMPORT)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest_subprocess("--simcuda", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([
        "SKIPPED * simulated CUDA cannot run this: the real CUDA, reached from C++ *(the real CUDA started) (when its module was collected)",
    ])


# On the simulated runner, a simcuda:N test runs in a simulation of its own inside the runner's:
# what its teardown does to the real CUDA must refuse neither it nor the runner's next test.
TEARDOWN_TESTS = '''
import pytest
import torch

from conftest import REAL


@pytest.fixture
def real_cuda_touched_at_teardown():
    yield
    REAL["started"] = True
    REAL["allocated"] += 1


@pytest.mark.simcuda(device="cuda:1")
def test_its_own_simulation(real_cuda_touched_at_teardown):
    assert torch.ones(2, device="cuda").device == torch.device("cuda:1")


def test_the_runners_next():
    assert torch.ones(2, device="cuda").is_cuda
'''


def test_a_teardown_that_reaches_the_real_cuda_refuses_no_test(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(FAKED_GPU_CONFTEST)
    pytester.makepyfile(test_teardown=TEARDOWN_TESTS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    monkeypatch.setenv("SIMCUDA_RUNNER_GPUS", "2")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rsf")
    result.assert_outcomes(passed=2)
