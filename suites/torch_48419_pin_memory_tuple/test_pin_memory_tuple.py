"""torch-48419: a batch pinned by DataLoader(pin_memory=True) keeps its containers' types.

Direct on a GPU; on the simulated device (simcuda:N), which pins through ATen's real path
(simcuda/pinning.py), simulated evidence. On a plain CPU the DataLoader silently skips pinning, so
its run would pass without pinning anything: the cpu parametrization skips, and the proxy below
runs the DataLoader's own pin helper with the simulated device's CPU pinning kernels instead.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from fixtures.known_bugs.library_api import library_api

from .batches import BATCHES, Batches, first, tensors_of
from .oracle import check_containers_kept

pin_batch = library_api("torch.utils.data._utils.pin_memory", "pin_memory", first_release="1.0.0")

DATALOADER_SKIPS_PINNING_ON_CPU = (
    "without an accelerator the DataLoader silently skips pinning, so a CPU run would pass without "
    "pinning anything: never evidence (test_pin_helper_keeps_containers_cpu_proxy is the CPU check)"
)


@pytest.mark.known_bug("torch-48419")
@pytest.mark.parametrize("kind", BATCHES)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_pin_memory_keeps_containers(device: str, num_workers: int, kind: str) -> None:
    if device == "cpu":
        pytest.skip(DATALOADER_SKIPS_PINNING_ON_CPU)
    loader = DataLoader(Batches(kind), batch_size=1, num_workers=num_workers, collate_fn=first, pin_memory=True)
    with torch.cuda.device(device):  # the pinning thread pins for the current device
        batches = list(loader)
    assert len(batches) == 2, f"the DataLoader yielded {len(batches)} batches"
    for batch in batches:
        assert all(tensor.is_pinned() for tensor in tensors_of(batch)), f"DataLoader(pin_memory=True) left a {kind} batch unpinned"
        check_containers_kept(BATCHES[kind](), batch, f"DataLoader(pin_memory=True, num_workers={num_workers})")


@pytest.mark.known_bug("torch-48419", evidence="proxy")
@pytest.mark.parametrize("kind", BATCHES)
def test_pin_helper_keeps_containers_cpu_proxy(cpu_pin_kernel, kind: str) -> None:
    batch = BATCHES[kind]()
    pinned = pin_batch(batch)  # what the DataLoader's pinning applies to every batch
    assert all(tensor.is_pinned() for tensor in tensors_of(pinned)), "harness: the stand-in pinning kernel did not run"
    check_containers_kept(batch, pinned, "the DataLoader's pin_memory helper (CPU stand-in kernel)")
