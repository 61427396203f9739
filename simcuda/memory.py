"""The simulated runner's device memory, as the caching allocator's statistics report it.

Counted from what really lives: each storage made on a device, once, in the allocator's 512-byte
blocks, until Python frees it (a finalizer on the storage, whose Python object lives exactly as
long as the storage does). Reserved memory is the high-water mark of allocated memory since the
last `empty_cache()`, as the caching allocator keeps freed blocks until then. So a leak shows as
growth, a freed tensor as a drop and a peak as a peak; what the figures never claim: fragmentation,
segment layout, streams' pools, an out-of-memory.
"""

from __future__ import annotations

import weakref
from collections import defaultdict

import torch

BLOCK = 512  # the caching allocator rounds every allocation up to a multiple of this
_COUNTERS = ("current", "peak", "allocated", "freed")
# torch.cuda.memory_stats' groups; those the simulation does not model stay at zero.
_POOLED = (
    "allocated_bytes", "active_bytes", "requested_bytes", "reserved_bytes",
    "allocation", "active", "segment", "inactive_split", "inactive_split_bytes",
)


def blocks(nbytes: int) -> int:
    return -(-nbytes // BLOCK) * BLOCK


class Counter:
    """current / peak / allocated / freed, as each of the allocator's statistics counts."""

    def __init__(self) -> None:
        self.current = self.peak = self.allocated = self.freed = 0

    def add(self, amount: int) -> None:
        self.current += amount
        self.allocated += amount
        self.peak = max(self.peak, self.current)

    def remove(self, amount: int) -> None:
        self.current -= amount
        self.freed += amount

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in _COUNTERS}


class DeviceMemory:
    """Per device index: bytes allocated, allocations, bytes reserved (runner.py keeps one)."""

    def __init__(self) -> None:
        self._counted: set[int] = set()  # storages counted, by their C pointer
        self.bytes: dict[int, Counter] = defaultdict(Counter)
        self.allocations: dict[int, Counter] = defaultdict(Counter)
        self.reserved: dict[int, Counter] = defaultdict(Counter)

    def made(self, index: int, tensor: torch.Tensor) -> None:
        """A tensor made on cuda:`index`: its storage counted once, until Python frees it."""
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self._counted:
            return
        size = blocks(storage.nbytes())
        self._counted.add(key)
        self.bytes[index].add(size)
        self.allocations[index].add(1)
        reserved = self.reserved[index]
        if self.bytes[index].current > reserved.current:
            reserved.add(self.bytes[index].current - reserved.current)
        weakref.finalize(storage, self._freed, key, index, size).atexit = False

    def _freed(self, key: int, index: int, size: int) -> None:
        self._counted.discard(key)
        self.bytes[index].remove(size)
        self.allocations[index].remove(1)

    def empty_cache(self) -> None:
        """Freed blocks go back to the device: reserved falls to what is allocated."""
        for index, reserved in self.reserved.items():
            reserved.remove(reserved.current - self.bytes[index].current)

    def reset_peak(self, index: int) -> None:
        for counters in (self.bytes, self.allocations, self.reserved):
            counters[index].peak = counters[index].current

    def reset_accumulated(self, index: int) -> None:
        for counters in (self.bytes, self.allocations, self.reserved):
            counters[index].allocated = counters[index].freed = 0

    def stats(self, index: int) -> dict[str, object]:
        """torch._C._cuda_memoryStats' nested layout (what torch.cuda.memory_stats flattens)."""
        modelled = {
            "allocated_bytes": self.bytes[index], "active_bytes": self.bytes[index], "requested_bytes": self.bytes[index],
            "allocation": self.allocations[index], "active": self.allocations[index], "reserved_bytes": self.reserved[index],
        }
        zero = Counter().as_dict()
        groups = {
            name: {pool: (modelled[name].as_dict() if name in modelled and pool == "all" else zero) for pool in ("all", "small_pool", "large_pool")}
            for name in _POOLED
        }
        # The pools' split needs block sizes the simulation never chose: "all" carries the figures.
        counts = dict.fromkeys(("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free"), 0)
        return {**groups, "oversize_allocations": zero, "oversize_segments": zero, "max_split_size": -1, **counts}
