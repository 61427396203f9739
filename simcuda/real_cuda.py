"""The real CUDA's own state, read where no stand-in answers: whether its caching allocator has
started, and how many allocations each real device has made. A simulation reads it when it opens
and the pytest plugin again at the end of each test phase: a change in between is a C++ path the
simulation's modes do not see reaching the real device. On a GPU machine TorchScript's `.to(device)`
starts CUDA itself (`to_dispatch`, torch/csrc/jit/runtime/register_prim_ops.cpp), where a machine
without a GPU answers with the driver's error.

What it cannot see: a start of the real CUDA once it has started in the process (an earlier real-GPU
test), and anything under an allocator that keeps no statistics (a pluggable one: then it reads
"not started" throughout). What it cannot tell apart: an allocation by another thread of the process
(one an earlier real-GPU test left running) from one by the simulated test."""

from __future__ import annotations

from collections.abc import Callable

import torch

RealCuda = tuple[tuple[int, int], ...] | None  # None: not started; else per real device, its allocations and their bytes so far

# Taken at import, before any simulation stands in for torch._C's allocator entries
# (stand_ins.allocator_api): the real answers, never the simulation's. CUDA builds only.
_MEMORY_STATS = getattr(torch._C, "_cuda_memoryStats", None)
_DEVICE_COUNT = getattr(torch._C, "_cuda_getDeviceCount", None)


def _allocated(stats: dict) -> tuple[int, int]:
    """The two counters that only grow: allocations made and their bytes (frees, a garbage
    collection of an earlier test's real tensors among them, change neither)."""
    return stats.get("allocation", {}).get("all", {}).get("allocated", 0), stats.get("allocated_bytes", {}).get("all", {}).get("allocated", 0)


def real_cuda_state() -> RealCuda:
    """None while the real CUDA has not started (a build without CUDA never does); once it has,
    each real device's allocations and their bytes so far."""
    if _MEMORY_STATS is None or _DEVICE_COUNT is None:
        return None
    try:
        # Until CUDA starts the allocator holds no device and refuses ("Invalid device argument"),
        # starting nothing; asked for the count first, the CUDA runtime would start its driver.
        first = _allocated(_MEMORY_STATS(0))
    except RuntimeError:
        return None
    return (first, *(_allocated(_MEMORY_STATS(index)) for index in range(1, _DEVICE_COUNT())))


def change(before: RealCuda, after: RealCuda) -> str:
    """What happened to the real CUDA between two reads, in words; "" for nothing."""
    if before == after:
        return ""
    if before is None or after is None or len(before) != len(after):
        return "the real CUDA started" if before is None else "the real CUDA's allocator changed"
    return ", ".join(
        f"cuda:{index}: {count - was_count} allocation(s), {size - was_size} bytes"
        for index, ((was_count, was_size), (count, size)) in enumerate(zip(before, after))
        if (count, size) != (was_count, was_size)
    )


class RealCudaWatch:
    """The real CUDA as last read: `change()` says what it did since, in words ("" for nothing)."""

    def __init__(self, read: Callable[[], RealCuda] = real_cuda_state) -> None:
        self._read = read
        self._seen = read()

    def change(self) -> str:
        now = self._read()
        happened, self._seen = change(self._seen, now), now
        return happened
