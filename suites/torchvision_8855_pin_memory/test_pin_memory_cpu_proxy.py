"""CPU proxy (labelled evidence="proxy"): with CPU kernels for aten::_pin_memory and
aten::is_pinned (the simulated device's, simcuda/pinning.py), torchvision's real pin_memory wrapper
and the DataLoader's pinning helper run on a machine without a GPU. Each result is compared with a
fresh sample, never with itself, and must read as pinned. What it cannot show: real page-locked
memory."""

from __future__ import annotations

import pytest

from fixtures.known_bugs.library_api import library_api

from .batches import BATCH_SIZE, COLLATES, TVTensorSamples, tensors_by_kind
from .oracle import check_kept
from .samples import SAMPLES

pin_batch = library_api("torch.utils.data._utils.pin_memory", "pin_memory", first_release="1.0.0")

pytestmark = pytest.mark.known_bug("torchvision-8855", evidence="proxy")


@pytest.mark.parametrize("kind", SAMPLES)
def test_pin_memory_keeps_tv_tensor_cpu_proxy(cpu_pin_kernel, kind):
    original = SAMPLES[kind]()
    pinned = original.pin_memory()
    assert pinned.is_pinned(), "harness: the stand-in _pin_memory kernel did not run"
    check_kept(original, pinned, f"{kind}.pin_memory() (CPU stand-in kernel)")


@pytest.mark.parametrize("collate", COLLATES)
def test_dataloader_pin_helper_keeps_tv_tensors_cpu_proxy(cpu_pin_kernel, collate):
    dataset = TVTensorSamples()
    batch = COLLATES[collate]([dataset[index] for index in range(BATCH_SIZE)])
    # The function the DataLoader's pinning thread applies to every batch.
    pinned = pin_batch(batch)
    leaves = list(tensors_by_kind(pinned))
    assert len(leaves) >= len(SAMPLES), f"the pinned {collate} batch holds {len(leaves)} tensors"
    for kind, tensor in leaves:
        assert tensor.is_pinned(), f"harness: the DataLoader's pin helper left a {kind} of the {collate} batch unpinned"
        check_kept(SAMPLES[kind](), tensor, f"DataLoader pin_memory helper on a {collate} batch (CPU stand-in kernel)")
