"""torchvision's documented TVTensor contract, pinned down both ways: .to(), .clone() and
.detach() keep the subclass and metadata; arithmetic, torch.cat and default_collate
return plain tensors by design. A release that changes either side fails here.

These are design-contract checks with ordinary assertions, deliberately not tied to
torchvision-8855: a kept subclass after .clone() says nothing about pin_memory. The pin_memory
row of the contract is the bug, in test_pin_memory_direct.py and test_pin_memory_cpu_proxy.py.

Every row must build a new object: `.to(device)` on the tensor's own device and the in-place
`.requires_grad_()` hand back the very tensor they were given, so comparing that with itself
could never fail. `.to(device, copy=True)` copies even on the same device; `.requires_grad_()` is
not a row (in place, it has no result that could differ). On the simulated GPU runner a result on
`cuda:N` is a simulated tensor whose own type is a twin of the subclass: `simcuda.gpu_type` reads
the class it stands for (a lost subclass still shows as a plain tensor)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import default_collate

from simcuda import gpu_type

from .oracle import metadata
from .samples import SAMPLES

KEEPING_OPERATIONS = {
    ".to(device, copy=True)": lambda tensor, device: tensor.to(device, copy=True),
    ".to(float64)": lambda tensor, device: tensor.to(torch.float64),
    ".clone()": lambda tensor, device: tensor.clone(),
    ".detach()": lambda tensor, device: tensor.detach(),
}
PLAIN_BY_DESIGN = {
    "tensor + 1": lambda tensor: tensor + 1,
    "tensor * 2": lambda tensor: tensor * 2,
    "torch.cat": lambda tensor: torch.cat([tensor, tensor]),
    "default_collate": lambda tensor: default_collate([tensor, tensor]),
}


@pytest.mark.parametrize("operation", KEEPING_OPERATIONS)
@pytest.mark.parametrize("kind", SAMPLES)
def test_operation_keeps_subclass_and_metadata(device, kind, operation):
    original = SAMPLES[kind]()
    result = KEEPING_OPERATIONS[operation](original, torch.device(device))
    assert result is not original, f"{kind}{operation} returned its input: this row compares a tensor with itself"
    # gpu_type: type() itself on a real GPU; on the simulated runner the class a simulated tensor's twin stands for
    assert gpu_type(result) is type(original), f"{kind}{operation} returned {gpu_type(result).__name__}"
    assert metadata(result) == metadata(original), f"{kind}{operation} changed metadata to {metadata(result)}"


@pytest.mark.parametrize("operation", PLAIN_BY_DESIGN)
@pytest.mark.parametrize("kind", SAMPLES)
def test_operation_returns_plain_tensor_by_design(kind, operation):
    result = PLAIN_BY_DESIGN[operation](SAMPLES[kind]())
    assert type(result) is torch.Tensor, (
        f"{operation} on {kind} returned {type(result).__name__}: torchvision's documented contract "
        f"(plain tensors from other operations) changed"
    )
