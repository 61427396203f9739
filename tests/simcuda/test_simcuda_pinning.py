"""Simulated pinned memory (simcuda/pinning.py): ATen's real pin_memory path on the CPU, the
DataLoader's pinning in the main thread and in its pin thread with worker processes, TVTensors
kept through `.to("cuda")` as on CUDA, and nothing left registered after the simulation."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch.utils.data import DataLoader
from torchvision import tv_tensors

from simcuda import StreamRace, is_simulated, real_cpu, simulated_cuda
from suites.torchvision_8855_pin_memory.batches import BATCH_SIZE, TVTensorSamples, as_list, tensors_by_kind


@pytest.fixture
def cuda1():
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        yield simulation


def test_pin_memory_copies_with_the_same_layout_and_remembers_the_storage(cuda1) -> None:
    source = torch.rand(4, 6)[:, ::2]  # a strided view
    pinned = source.pin_memory()
    assert pinned.is_pinned() and not source.is_pinned()
    assert pinned.stride() == source.stride() and torch.equal(pinned, source)
    assert pinned.pin_memory() is pinned  # already pinned: ATen's composite hands it back
    assert torch.empty(3, pin_memory=True).is_pinned()


def test_pinning_a_cuda_tensor_is_refused_with_atens_text(cuda1) -> None:
    with pytest.raises(RuntimeError, match="cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned"):
        torch.rand(2, device="cuda").pin_memory()
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        torch.empty(2, device="cuda", pin_memory=True)


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_pins_every_batch_as_on_a_gpu_machine(cuda1, workers: int) -> None:
    loader = DataLoader(TVTensorSamples(), batch_size=BATCH_SIZE, num_workers=workers, collate_fn=as_list, pin_memory=True)
    batches = list(loader)
    leaves = [tensor for batch in batches for _, tensor in tensors_by_kind(batch)]
    assert len(batches) == 2 and leaves and all(tensor.is_pinned() for tensor in leaves)
    assert {type(tensor) for tensor in leaves} >= {tv_tensors.Image, tv_tensors.BoundingBoxes}


def test_a_tv_tensor_moved_to_cuda_follows_torchvisions_own_rules(cuda1) -> None:
    """As on CUDA, torchvision's __torch_function__ decides: `.to()` keeps the class and its
    metadata (it is in _FORCE_TORCHFUNCTION_SUBCLASS), `.cuda()` does not (it is not)."""
    from torchvision.tv_tensors._torch_function_helpers import _FORCE_TORCHFUNCTION_SUBCLASS

    boxes = tv_tensors.BoundingBoxes([[1.0, 2.0, 5.0, 6.0]], format="XYXY", canvas_size=(8, 9))
    moved = boxes.to("cuda")
    assert isinstance(moved, tv_tensors.BoundingBoxes) and is_simulated(moved) and moved.device == torch.device("cuda:1")
    assert (moved.format, moved.canvas_size) == (boxes.format, boxes.canvas_size)
    assert torch.equal(real_cpu(moved), boxes.as_subclass(torch.Tensor))
    back = moved.to("cpu")
    assert type(back) is tv_tensors.BoundingBoxes and back.canvas_size == (8, 9)
    assert isinstance(boxes.cuda(), tv_tensors.BoundingBoxes) is (torch.Tensor.cuda in _FORCE_TORCHFUNCTION_SUBCLASS)


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a machine with a GPU pinning is real outside the simulation")
def test_nothing_is_left_registered_after_the_simulation() -> None:
    with simulated_cuda(2):
        assert torch.empty(2).pin_memory().is_pinned()
    assert not torch.empty(2).is_pinned()
    with pytest.raises(RuntimeError):
        torch.empty(2).pin_memory()  # no accelerator: torch's own refusal again


def offload_to_pinned_host(*, synchronized: bool) -> float:
    """A CPU-offload store as a `pytest --simcuda` test runs it (the log keeps only other devices'
    allocations, so plain CPU calls may skip the modes): a pinned host buffer, a non-blocking copy
    from cuda:1 on a side stream, then the host reads it."""
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        simulation.log_only_outside({"cpu", "cuda:1"})
        kv = torch.rand(64, device="cuda:1")
        host = torch.empty(64, pin_memory=True)
        assert host.is_pinned() and not is_simulated(host)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            host.copy_(kv, non_blocking=True)
        if synchronized:
            side.synchronize()
        return float(host.sum())


def test_a_pinned_factory_is_the_simulations_even_where_plain_cpu_calls_skip_the_modes() -> None:
    """`torch.empty(n, pin_memory=True)` is a plain CPU call by its arguments: past the modes it
    reached the real CUDA host allocator ("Found no NVIDIA driver" here, a real pinned buffer on a
    GPU machine), so the race below was neither caught nor cleared."""
    with pytest.raises(StreamRace, match="not ordered after the write by aten::copy_"):
        offload_to_pinned_host(synchronized=False)
    assert offload_to_pinned_host(synchronized=True) > 0


def test_a_simulation_inside_another_registers_the_pinning_kernels_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A simcuda:N test inside the simulated runner opens a simulation inside another: torch 2.6 to
    2.11 refuse a second Python kernel for `_pin_memory` on the CPU key (seen on torch 2.11), so
    the inner one answers with the outer one's kernels. Here that refusal is put back."""
    impl = torch.library.Library.impl
    if "allow_override" in inspect.signature(impl).parameters:  # 2.14 overrides by default; 2.6 has no such switch
        monkeypatch.setattr(torch.library.Library, "impl", lambda self, *args, **kwargs: impl(self, *args, **kwargs, allow_override=False))
    with simulated_cuda(2):
        outer = torch.ones(2).pin_memory()
        with simulated_cuda(2):
            inner = torch.ones(2).pin_memory()
            assert outer.is_pinned() and inner.is_pinned()  # pinned memory is the process's
        assert inner.is_pinned() and not torch.ones(2).is_pinned()
