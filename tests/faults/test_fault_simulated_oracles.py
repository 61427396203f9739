"""The suites' oracles on the simulated device (simcuda:1) flag faults shaped like the real bugs.

Each fault runs inside `simulated_cuda()` exactly as a simcuda:1 test body does, on "cuda:1":
a factory without device= (kornia-2837's `gaussian`), a plain tensor attribute built on cuda:0
(kornia-2791's `pl` on 0.7.1), noise drawn with a CPU generator, a `.to()` forgotten on a return
path, a table made on the default GPU and moved back, a computation that changes on CUDA. Each
has a fixed twin that must stay clean, so the oracle is not just failing on everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
from kornia.augmentation import RandomPlanckianJitter

from fixtures.known_bugs.outcomes import BugObserved
from fixtures.proxies.meta_proxy import CLEAN, DEVICE_ERROR, FINDING, WRONG_DEVICE_OUTPUT
from simcuda import describe, simulated_cuda
from suites.device_oracle import check_runs_on
from suites.kornia_2791_planckian_jitter import test_planckian_jitter_device as jitter_direct
from suites.kornia_sweeps.targets import SweepCall
from suites.kornia_sweeps.test_device_sweep import FOREIGN_ALLOCATION, VALUE_MISMATCH, simulated_result

DEVICE = torch.device("cuda:1")


@pytest.fixture
def simulation() -> Iterator[object]:
    """The faulty run's simulation; a fixed twin runs in a fresh one (`simulated_cuda()` again)."""
    with simulated_cuda(device_count=2) as running:
        yield running


class PlainAttributeOnDefaultGpuJitter(RandomPlanckianJitter):
    """kornia 0.7.1's layout: `pl` a plain attribute, made on cuda:0 whenever CUDA is available."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        table = self._buffers.pop("pl")
        self.pl = table.to("cuda:0") if torch.cuda.is_available() else table


def forgetful_gaussian(image: torch.Tensor) -> torch.Tensor:
    """kornia 0.7.2-dev `gaussian()`: the (1, 1) mean made without device= meets the device's arange."""
    x = torch.arange(5, device=image.device, dtype=image.dtype) - 2
    return image.mean() * torch.exp(-((x - torch.tensor([[0.0]])) ** 2))


def fixed_gaussian(image: torch.Tensor) -> torch.Tensor:
    x = torch.arange(5, device=image.device, dtype=image.dtype) - 2
    return image.mean() * torch.exp(-((x - torch.tensor([[0.0]], device=image.device)) ** 2))


def cpu_generator_noise(image: torch.Tensor) -> torch.Tensor:
    """Noise drawn with a CPU generator and no device=: it stays on the CPU."""
    return image + torch.rand(image.shape, generator=torch.Generator().manual_seed(0))


def device_generator_noise(image: torch.Tensor) -> torch.Tensor:
    return image + torch.rand(image.shape, generator=torch.Generator().manual_seed(0)).to(image.device)


def forgotten_to_on_return(image: torch.Tensor) -> torch.Tensor:
    """One branch hands back the CPU copy it worked on."""
    return image.cpu() * 2


def kept_device_on_return(image: torch.Tensor) -> torch.Tensor:
    return (image.cpu() * 2).to(image.device)


def table_on_default_gpu(image: torch.Tensor) -> torch.Tensor:
    """A table made on "cuda" (the current device, cuda:0), then moved to the input: right answer,
    an allocation on a GPU the caller never used."""
    table = torch.linspace(0, 1, image.shape[-1], device="cuda" if image.is_cuda else "cpu")
    return image * table.to(image.device)


def table_on_input_device(image: torch.Tensor) -> torch.Tensor:
    return image * torch.linspace(0, 1, image.shape[-1], device=image.device)


def different_on_cuda(image: torch.Tensor) -> torch.Tensor:
    """A CUDA-only code path that computes something else."""
    return image * (1.01 if image.is_cuda else 1.0)


def sweep_call(function: Callable[[torch.Tensor], torch.Tensor]) -> SweepCall:
    return SweepCall(f"fake.{function.__name__}", lambda device: function(torch.rand(2, 3, 4, 4).to(device)))


def swept(function: Callable[[torch.Tensor], torch.Tensor], simulation: object):
    """The simulated sweep's result for a function, against its own plain-CPU run under one seed."""
    target = sweep_call(function)
    torch.manual_seed(0)
    expected = target.call(torch.device("cpu"))
    torch.manual_seed(0)
    return simulated_result(target, DEVICE, simulation, expected)


@pytest.mark.catches("suites/kornia_2791_planckian_jitter/test_planckian_jitter_device.py::moved_run_matches_cpu")
def test_fault_plain_attribute_built_on_cuda0_is_flagged_on_simcuda1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jitter_direct, "RandomPlanckianJitter", PlainAttributeOnDefaultGpuJitter)
    with simulated_cuda(device_count=2) as simulation, pytest.raises(BugObserved, match="held tensors not on cuda:1 after .to\\(\\): pl"):
        jitter_direct.moved_run_matches_cpu("blackbody", None, 2, DEVICE, simulation)
    monkeypatch.setattr(jitter_direct, "RandomPlanckianJitter", RandomPlanckianJitter)
    with simulated_cuda(device_count=2) as simulation:
        jitter_direct.moved_run_matches_cpu("blackbody", None, 2, DEVICE, simulation)  # the fixed twin


@pytest.mark.catches("simcuda/allocations.py::describe")
def test_fault_allocation_on_cuda0_is_named_with_its_caller(simulation) -> None:
    before = len(simulation.allocations)
    table_on_default_gpu(torch.rand(1, 3, 4, 4).to(DEVICE))
    foreign = simulation.foreign_allocations({"cpu", str(DEVICE)}, since=before)
    detail = describe(foreign)
    assert detail.startswith("1 allocation(s)") and "on cuda:0 at" in detail and "table_on_default_gpu" in detail, detail
    assert simulation.foreign_allocations({"cpu", str(DEVICE)}, since=len(simulation.allocations)) == []


@pytest.mark.catches("suites/device_oracle.py::check_runs_on")
@pytest.mark.parametrize(
    ("faulty", "fixed", "reported"),
    [
        pytest.param(forgetful_gaussian, fixed_gaussian, "Expected all tensors to be on the same device", id="factory-without-device"),
        pytest.param(forgotten_to_on_return, kept_device_on_return, "output tensor #0 is on cpu", id="forgotten-to"),
        pytest.param(table_on_default_gpu, table_on_input_device, "on a device the test never asked for", id="default-gpu-table"),
    ],
)
def test_fault_is_flagged_by_the_2837_direct_helper_on_simcuda1(faulty, fixed, reported: str) -> None:
    image = torch.rand(1, 3, 4, 4)
    with simulated_cuda(device_count=2) as simulation, pytest.raises(BugObserved, match=reported):
        check_runs_on(lambda: faulty(image.to(DEVICE)), DEVICE, simulation, faulty.__name__)
    with simulated_cuda(device_count=2) as simulation:
        check_runs_on(lambda: fixed(image.to(DEVICE)), DEVICE, simulation, fixed.__name__)


@pytest.mark.catches(
    "suites/kornia_sweeps/test_device_sweep.py::simulated_result",
    "suites/kornia_sweeps/test_device_sweep.py::value_mismatch",
)
@pytest.mark.parametrize(
    ("faulty", "fixed", "found"),
    [
        pytest.param(forgetful_gaussian, fixed_gaussian, DEVICE_ERROR, id="factory-without-device"),
        pytest.param(cpu_generator_noise, device_generator_noise, DEVICE_ERROR, id="cpu-generator"),
        pytest.param(forgotten_to_on_return, kept_device_on_return, WRONG_DEVICE_OUTPUT, id="forgotten-to"),
        pytest.param(table_on_default_gpu, table_on_input_device, FOREIGN_ALLOCATION, id="default-gpu-table"),
        pytest.param(different_on_cuda, table_on_input_device, VALUE_MISMATCH, id="cuda-only-path"),
    ],
)
def test_fault_is_a_simulated_sweep_finding(simulation, faulty, fixed, found: str) -> None:
    result = swept(faulty, simulation)
    assert (result.kind, result.found) == (FINDING, found), result
    assert swept(fixed, simulation).kind == CLEAN


def _entries(count: int) -> list:
    from simcuda.allocations import Allocation

    return [Allocation(f"aten::op{i}", "cuda:0", (i,), "float32", ("/x/pkg/file.py", i, "f")) for i in range(count)]


def test_a_description_names_the_first_three_allocations_and_counts_the_rest() -> None:
    assert describe(_entries(5)) == (
        "5 allocation(s) on a device the test never asked for: aten::op0 [0] on cuda:0 at pkg/file.py:0 in f; "
        "aten::op1 [1] on cuda:0 at pkg/file.py:1 in f; aten::op2 [2] on cuda:0 at pkg/file.py:2 in f (+2 more)"
    )
    assert describe(_entries(3)).endswith("at pkg/file.py:2 in f")


def test_the_caller_is_the_first_frame_outside_torch_or_says_there_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from simcuda import allocations

    assert allocations.caller_summary().startswith(f"{__file__}:")
    monkeypatch.setattr(allocations, "caller_frame", lambda: None)
    assert allocations.caller_summary() == "<torch internals>"
