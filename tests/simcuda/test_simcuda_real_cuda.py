"""The real CUDA as a simulation watches it (simcuda/real_cuda.py): read from torch._C where no
stand-in answers, table-tested against faked entries; and, in a `pytest --simcuda` session on a
faked GPU machine, a test whose C++ path starts the real CUDA or allocates on a real device is
refused as on a machine without a GPU, where the same path is the driver's error."""

from __future__ import annotations

import json

import pytest
import torch

from simcuda import Runner, real_cuda, simulated_cuda
from simcuda.real_cuda import RealCudaWatch, real_cuda_state


def stats(allocated: int) -> dict:
    """torch._C._cuda_memoryStats's nested layout, the one count read."""
    return {"allocation": {"all": {"allocated": allocated, "current": 0, "freed": allocated, "peak": 1}}}


@pytest.mark.parametrize(
    ("entries", "python_flag", "expected"),
    [
        ({"_MEMORY_STATS": None, "_DEVICE_COUNT": None}, False, None),  # a build without CUDA
        ({"_ALLOCATOR_STARTED": lambda: False}, False, None),  # CUDA not started
        ({"_ALLOCATOR_STARTED": lambda: True}, False, (4, 0)),  # started from C++: torch.cuda's flag never knew
        ({"_ALLOCATOR_STARTED": None}, False, None),  # a torch without the C++ answer, started from C++: unseen
        ({"_ALLOCATOR_STARTED": None}, True, (4, 0)),  # ... started through torch.cuda
    ],
    ids=["no CUDA build", "not started", "started", "older torch, unseen", "older torch, python start"],
)
def test_the_state_read(monkeypatch: pytest.MonkeyPatch, entries: dict, python_flag: bool, expected) -> None:
    monkeypatch.setattr(real_cuda, "_MEMORY_STATS", lambda index: stats([4, 0][index]))
    monkeypatch.setattr(real_cuda, "_DEVICE_COUNT", lambda: 2)
    for name, value in entries.items():
        monkeypatch.setattr(real_cuda, name, value)
    monkeypatch.setattr(torch.cuda, "_initialized", python_flag)
    assert real_cuda_state() == expected


def test_a_watch_moves_once_for_each_start_or_allocation() -> None:
    states = iter([None, None, (0,), (0,), (3,), (3,)])
    watch = RealCudaWatch(lambda: next(states))
    assert [watch.moved() for _ in range(5)] == [False, True, False, True, False]


def test_the_runner_watches_the_real_cuda_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    real = {"started": False}
    monkeypatch.setattr(real_cuda, "_ALLOCATOR_STARTED", lambda: real["started"])
    monkeypatch.setattr(real_cuda, "_MEMORY_STATS", lambda index: stats(0))
    monkeypatch.setattr(real_cuda, "_DEVICE_COUNT", lambda: 1)
    runner = Runner(1, {})
    assert not runner.real_cuda_moved()  # not running: nothing to watch
    runner.open()
    try:
        real["started"] = True
        assert runner.real_cuda_moved() and not runner.real_cuda_moved()
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
        assert real_cuda_state() is None and not simulation.real_cuda.moved()


# A GPU machine faked for the session: the real CUDA starts (or allocates on its cuda:0) when a
# test calls what stands for a C++ path the simulation's modes do not see.
FAKED_GPU_CONFTEST = '''
from simcuda import real_cuda

REAL = {"started": False, "allocated": 0}
real_cuda._ALLOCATOR_STARTED = lambda: REAL["started"]
real_cuda._DEVICE_COUNT = lambda: 1
real_cuda._MEMORY_STATS = lambda index: {"allocation": {"all": {"allocated": REAL["allocated"]}}}
'''
FAKED_GPU_TESTS = '''
import torch

from conftest import REAL


def test_a_scripted_move_starts_the_real_cuda():
    REAL["started"] = True  # TorchScript's to_dispatch starting CUDA; the op then ran simulated
    assert torch.ones(2, device="cuda").device == torch.device("cuda:1")


def test_a_binding_allocates_on_the_real_gpu():
    REAL["allocated"] += 1
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
        "SKIPPED * simulated CUDA cannot run this: the real CUDA, reached from C++ where the simulation's modes do not see*",
        "FAILED *test_a_bug_of_its_own*",
    ])
    report = json.loads((pytester.path / "simcuda-report.json").read_text())
    assert list(report["refused_by_feature"].values()) == [2], report["refused_by_feature"]
