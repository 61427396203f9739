"""The real CUDA's own state, read where no stand-in answers: whether its caching allocator has
started, and how many allocations each real device has made. A simulation reads it when it opens
and the pytest plugin again at the end of each test phase: a change in between is a C++ path the
simulation's modes do not see reaching the real device. On a GPU machine TorchScript's `.to(device)`
starts CUDA itself (`to_dispatch`, torch/csrc/jit/runtime/register_prim_ops.cpp), where a machine
without a GPU answers with the driver's error.

What it cannot see: a start of the real CUDA once it has started in the process (an earlier real-GPU
test), and, on a torch without `torch._C._accelerator_isAllocatorInitialized`, a start from C++ at
all (`torch.cuda`'s own flag records only its Python start); allocations are seen either way."""

from __future__ import annotations

from collections.abc import Callable

import torch

RealCuda = tuple[int, ...] | None  # None: not started; else the allocations each real device made

# Taken at import, before any simulation stands in for torch._C's allocator entries
# (stand_ins.allocator_api): the real answers, never the simulation's.
_ALLOCATOR_STARTED = getattr(torch._C, "_accelerator_isAllocatorInitialized", None)
_MEMORY_STATS = getattr(torch._C, "_cuda_memoryStats", None)  # CUDA builds only
_DEVICE_COUNT = getattr(torch._C, "_cuda_getDeviceCount", None)


def real_cuda_state() -> RealCuda:
    """None while the real CUDA has not started (a build without CUDA never does); once it has,
    the allocations each real device's caching allocator has made so far."""
    if _MEMORY_STATS is None or _DEVICE_COUNT is None:
        return None
    started = _ALLOCATOR_STARTED() if _ALLOCATOR_STARTED is not None else torch.cuda._initialized
    if not started:
        return None
    return tuple(_MEMORY_STATS(index)["allocation"]["all"]["allocated"] for index in range(_DEVICE_COUNT()))


class RealCudaWatch:
    """The real CUDA as last read: `moved()` says whether it started or allocated since."""

    def __init__(self, read: Callable[[], RealCuda] = real_cuda_state) -> None:
        self._read = read
        self._seen = read()

    def moved(self) -> bool:
        now = self._read()
        moved, self._seen = now != self._seen, now
        return moved
