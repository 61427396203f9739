"""A CPU stand-in for pinning, so torchvision's real pin_memory wrapper runs on a machine without
an accelerator (where Tensor.pin_memory() raises instead).

A CPU kernel for aten::pin_memory returning a clone (a pinned copy is a fresh tensor, too) and
one for aten::is_pinned returning True, registered with torch.library and removed on exit. The
wrapper under test (TVTensor.__torch_function__) sits above the dispatcher, so it runs unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


def _pin_by_cloning(tensor: torch.Tensor, device: torch.device | None = None) -> torch.Tensor:
    return tensor.clone()


def _always_pinned(tensor: torch.Tensor, device: torch.device | None = None) -> bool:
    return True


@contextmanager
def cpu_pinning() -> Iterator[None]:
    """Within the block, pin_memory() / is_pinned() of CPU tensors use the stand-in kernels."""
    library = torch.library.Library("aten", "IMPL")
    try:
        library.impl("pin_memory", _pin_by_cloning, "CPU")
        library.impl("is_pinned", _always_pinned, "CPU")
        yield
    finally:
        library._destroy()  # unregisters both kernels (torch.library's own teardown)
