"""The simulated GPU runner (simcuda/runner.py), in this process: its environment variable, what
torch.cuda answers under it, its generators, and a simcuda:N simulation opened inside it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from simcuda import SimulationUnsupported, simulated_cuda
from simcuda.devices import RunnerConfigError, gpu_uuid, runner_gpus, visible_gpus
from simcuda.runner import Runner


@pytest.mark.parametrize(("value", "gpus"), [(None, None), ("", None), (" ", None), ("1", 1), ("2", 2), ("8", 8)])
def test_the_variable_names_a_gpu_count(value: str | None, gpus: int | None) -> None:
    assert runner_gpus({} if value is None else {"SIMCUDA_RUNNER_GPUS": value}) == gpus


@pytest.mark.parametrize("value", ["0", "9", "two", "-1", "1.5", "²"])  # "²".isdigit() is True
def test_anything_else_is_one_line(value: str) -> None:
    with pytest.raises(RunnerConfigError) as error:
        runner_gpus({"SIMCUDA_RUNNER_GPUS": value})
    assert str(error.value) == f"SIMCUDA_RUNNER_GPUS={value!r}: expected a GPU count from 1 to 8"


@pytest.mark.parametrize(
    ("cuda_visible_devices", "seen"),
    [
        (None, [0, 1, 2]),
        ("1", [1]),
        ("2,0", [2, 0]),
        ("0,7,1", [0]),  # CUDA stops at the first invalid entry
        ("1,1", [1]),  # ... and at a repeated one
        ("", []),
        (gpu_uuid(2), [2]),
    ],
)
def test_cuda_visible_devices_is_read_as_cuda_reads_it(cuda_visible_devices: str | None, seen: list[int]) -> None:
    assert visible_gpus(3, cuda_visible_devices) == seen


@pytest.fixture
def environ() -> dict[str, str]:
    return {}


@pytest.fixture
def runner(environ: dict[str, str]) -> Iterator[Runner]:
    opened = Runner(2, environ).open()
    try:
        yield opened
    finally:
        opened.close()


def test_cuda_starts_lazily_on_first_use(runner: Runner) -> None:
    assert torch.cuda.is_available() and torch.cuda.device_count() == 2
    torch.manual_seed(0)  # seeds every device lazily, as torch does: CUDA does not start
    assert not torch.cuda.is_initialized() and not torch.cuda.memory.is_initialized()
    x = torch.ones(2, device="cuda:1")
    assert torch.cuda.is_initialized() and x.device == torch.device("cuda:1")
    properties = torch.cuda.get_device_properties(1)
    assert properties.uuid == gpu_uuid(1) and "no real GPU" in torch.cuda.get_device_name(0)
    assert torch.cuda.get_device_capability() == (9, 0)
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.cuda.get_device_properties(2)


def test_the_pinned_gpu_is_read_until_cuda_starts(runner: Runner, environ: dict[str, str]) -> None:
    environ["CUDA_VISIBLE_DEVICES"] = "1"  # an xdist worker pins itself after the runner started
    assert torch.cuda.device_count() == 1
    torch.cuda.synchronize()
    environ["CUDA_VISIBLE_DEVICES"] = "0,1"  # too late: the context is open
    assert torch.cuda.device_count() == 1 and torch.cuda.get_device_properties(0).uuid == gpu_uuid(1)


def test_each_device_has_a_philox_shaped_generator_restored_exactly(runner: Runner) -> None:
    torch.manual_seed(7)
    cpu = torch.rand(4)
    torch.manual_seed(7)
    assert not torch.equal(torch.rand(4, device="cuda:0").cpu(), cpu)  # CUDA's numbers are not the CPU's
    states = torch.cuda.get_rng_state_all()
    assert [(state.dtype, state.numel()) for state in states] == [(torch.uint8, 16)] * 2
    first = torch.randn(3, device="cuda:1").cpu()
    assert not torch.equal(torch.cuda.get_rng_state(1), states[1])  # the offset moved
    torch.cuda.set_rng_state_all(states)
    assert torch.equal(torch.randn(3, device="cuda:1").cpu(), first)
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        torch.cuda.set_rng_state(torch.get_rng_state())  # a CPU state: what the harness once passed


def test_cudnn_answers_as_set_while_cpu_kernels_run(runner: Runner) -> None:
    assert torch.backends.cudnn.enabled
    grid = torch.zeros(1, 2, 2, 2, device="cuda")
    out = torch.nn.functional.grid_sample(torch.rand(1, 1, 4, 4, device="cuda"), grid, align_corners=False)
    assert out.shape == (1, 1, 2, 2)  # cuDNN's grid sampler would not run on the CPU data


def test_torch_is_as_found_after_it(environ: dict[str, str]) -> None:
    before = (torch.cuda.is_available, torch.cuda.device_count, torch.cuda.get_rng_state, torch.backends.cudnn.enabled)
    Runner(1, environ).open().close()
    assert (torch.cuda.is_available, torch.cuda.device_count, torch.cuda.get_rng_state, torch.backends.cudnn.enabled) == before


def test_a_simcuda_test_inside_it_meets_the_runners_tensors_as_real_cuda(runner: Runner) -> None:
    held = torch.ones(2, device="cuda:1")  # a library's per-device cache, filled by a cuda:1 test
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        with pytest.raises(SimulationUnsupported, match="a real CUDA tensor meeting simulated ones"):
            torch.ones(2, device="cuda") + held
        left_behind = torch.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="outside simulated_cuda"):  # what real CUDA raises on it
        held + left_behind
    assert torch.equal((held + 1).cpu(), torch.full((2,), 2.0))  # the runner is back, its modes too


def test_its_refusals_are_still_logged_after_a_simcuda_test_inside_it(runner: Runner) -> None:
    with simulated_cuda(2):
        pass
    with pytest.raises(SimulationUnsupported):
        torch.cuda.CUDAGraph()
    assert runner.new_refusals() == ["CUDA graphs (torch.cuda.CUDAGraph)"]


def test_memory_statistics_count_what_lives(runner: Runner) -> None:
    """A leak grows memory_allocated, a freed tensor drops it (its views keep its storage alive),
    the peak is a peak, reserved memory holds freed blocks until empty_cache."""
    assert torch.cuda.memory_allocated() == 0  # CUDA not started: torch answers nothing
    x = torch.zeros(1000, device="cuda:0")  # 4000 bytes: one 4096-byte block
    assert torch.cuda.memory_allocated(0) == 4096 and torch.cuda.memory_allocated(1) == 0
    view = x[:10]
    del x
    assert torch.cuda.memory_allocated() == 4096  # the view holds the storage
    del view
    assert (torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated(), torch.cuda.memory_reserved()) == (0, 4096, 4096)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    assert (torch.cuda.memory_reserved(), torch.cuda.max_memory_allocated()) == (0, 0)
    kept = [torch.ones(10, device="cuda:1") * 2 for _ in range(3)]  # each product's operand freed at once
    assert torch.cuda.memory_allocated(1) == 3 * 512 and torch.cuda.memory_stats(1)["allocation.all.current"] == 3
    assert "PyTorch CUDA memory summary, device ID 1" in torch.cuda.memory_summary(1) and kept
    with pytest.raises(SimulationUnsupported, match="mem_get_info"):  # free memory would be made up
        torch.cuda.mem_get_info()
