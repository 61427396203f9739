"""CPU proxy (labelled evidence="proxy"): with a stand-in CPU kernel for aten::pin_memory and
aten::is_pinned (cpu_pinning.py), torchvision's real pin_memory wrapper and the DataLoader's
pinning helper run on a machine without a GPU. What it cannot show: real page-locked memory."""

from __future__ import annotations

import pytest
from torch.utils.data._utils.pin_memory import pin_memory as pin_batch

from .batches import BATCH_SIZE, COLLATES, TVTensorSamples, tensors_by_kind
from .oracle import check_kept
from .samples import SAMPLES

pytestmark = pytest.mark.known_bug("torchvision-8855", evidence="proxy")


@pytest.mark.parametrize("kind", SAMPLES)
def test_pin_memory_keeps_tv_tensor_cpu_proxy(cpu_pin_kernel, kind):
    original = SAMPLES[kind]()
    pinned = original.pin_memory()
    assert pinned.is_pinned(), "the stand-in pin_memory kernel did not run"
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
        check_kept(SAMPLES[kind](), tensor, f"DataLoader pin_memory helper on a {collate} batch (CPU stand-in kernel)")
