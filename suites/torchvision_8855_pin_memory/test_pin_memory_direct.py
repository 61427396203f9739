"""The real symptom: pin_memory on a CUDA machine, on each TVTensor type and through the
upstream DataLoader reproducer (pin_memory=True, in the main thread and with worker processes
and the pin thread). On a GPU it is direct evidence; on the simulated device (simcuda:N), which
pins through ATen's real path (simcuda/pinning.py), simulated evidence. On a plain CPU it cannot
run: Tensor.pin_memory() then raises, and the DataLoader silently skips pinning."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from .batches import BATCH_SIZE, COLLATES, TVTensorSamples, tensors_by_kind
from .oracle import check_kept
from .samples import SAMPLES

pytestmark = pytest.mark.known_bug("torchvision-8855")

NO_PINNING_ON_CPU = (
    "pinning needs a CUDA device: without one Tensor.pin_memory() raises; test_pin_memory_cpu_proxy.py runs torchvision's wrapper on CPU"
)
DATALOADER_SKIPS_PINNING_ON_CPU = (
    "without an accelerator the DataLoader silently skips pinning, so a CPU run would pass without "
    "pinning anything: never evidence (test_pin_memory_cpu_proxy.py is the CPU check)"
)


@pytest.mark.parametrize("kind", SAMPLES)
def test_pin_memory_keeps_tv_tensor(device, kind):
    if device == "cpu":
        pytest.skip(NO_PINNING_ON_CPU)
    original = SAMPLES[kind]()
    with torch.cuda.device(device):  # pinned memory belongs to the current CUDA device's context
        pinned = original.pin_memory()
    assert pinned.is_pinned(), f"{kind}.pin_memory() returned unpinned memory"
    check_kept(original, pinned, f"{kind}.pin_memory()")


@pytest.mark.parametrize("collate", COLLATES)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_pin_memory_keeps_tv_tensors(device, num_workers, collate):
    if device == "cpu":
        pytest.skip(DATALOADER_SKIPS_PINNING_ON_CPU)
    loader = DataLoader(
        TVTensorSamples(), batch_size=BATCH_SIZE, num_workers=num_workers, collate_fn=COLLATES[collate], pin_memory=True
    )
    with torch.cuda.device(device):  # the pinning thread pins for the current device
        batches = list(loader)
    assert batches, "the DataLoader yielded no batch"
    for batch in batches:
        for kind, tensor in tensors_by_kind(batch):
            assert tensor.is_pinned(), f"DataLoader(pin_memory=True, {collate}) left a {kind} unpinned"
            check_kept(SAMPLES[kind](), tensor, f"DataLoader(pin_memory=True, num_workers={num_workers}, collate_fn={collate})")
