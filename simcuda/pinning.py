"""Simulated pinned memory: `pin_memory()` runs ATen's real path on the CPU.

`Tensor.pin_memory()` is ATen's composite `pin_memory` (`is_pinned`, then `_pin_memory`); a
TVTensor's `__torch_function__` wraps it, as it does on a GPU machine. While the simulation runs,
CPU kernels registered with torch.library answer the two ATen ops: `_pin_memory` makes a copy
with the same sizes and strides and remembers its storage; `is_pinned` is true only for storages
it made. The `torch.accelerator` calls the DataLoader makes (`is_available`,
`current_accelerator`, `current_device_index`, and `set_device_index` from its pin thread) answer
as on a CUDA machine (stand_ins.py), so `DataLoader(pin_memory=True)` pins, in the main thread or
in its pin thread with worker processes. The kernels are process-wide (the pin thread has no
simulation modes: they are thread-local) and removed on exit.

It proves what pinning does to the objects that go through it (type, metadata, sizes, values);
never anything about page-locked memory, its allocator or transfer speed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch.multiprocessing.reductions import StorageWeakRef


class PinnedStorages:
    """The storages `_pin_memory` made, by weak reference: `is_pinned` answers from them."""

    def __init__(self) -> None:
        self._made: dict[int, StorageWeakRef] = {}

    def pin(self, tensor: torch.Tensor, device: torch.device | None = None) -> torch.Tensor:
        pinned = torch.empty_strided(tensor.size(), tensor.stride(), dtype=tensor.dtype)
        pinned.copy_(tensor)
        storage = pinned.untyped_storage()
        self._made = {key: ref for key, ref in self._made.items() if not ref.expired()}
        self._made[storage._cdata] = StorageWeakRef(storage)
        return pinned

    def is_pinned(self, tensor: torch.Tensor, device: torch.device | None = None) -> bool:
        ref = self._made.get(tensor.untyped_storage()._cdata)
        return ref is not None and not ref.expired()


# The storages of the outermost simulation open now (a simcuda:N test inside the simulated runner
# is a simulation inside another): its kernels answer for every one nested in it, since pinned
# memory is the process's, and torch 2.6 to 2.11 refuse a second Python kernel for the same op and
# dispatch key ("already a kernel registered from python"; torch 2.14 overrides by default).
_REGISTERED: list[PinnedStorages] = []


@contextlib.contextmanager
def simulated_pinning() -> Iterator[PinnedStorages]:
    """ATen's `_pin_memory` and `is_pinned` on CPU tensors answered by PinnedStorages until the
    block ends; inside another such block, by that block's."""
    if _REGISTERED:
        yield _REGISTERED[0]
        return
    pinned = PinnedStorages()
    library = torch.library.Library("aten", "IMPL")
    try:
        library.impl("_pin_memory", pinned.pin, "CPU")
        library.impl("is_pinned", pinned.is_pinned, "CPU")
        _REGISTERED.append(pinned)
        yield pinned
    finally:
        _REGISTERED.clear()
        library._destroy()  # unregisters both kernels (torch.library's own teardown)


def cannot_pin_message(tensor_type: str) -> str:
    """ATen's refusal to pin a tensor that is not a dense CPU tensor (aten/src/ATen/native/Memory.cpp)."""
    return f"cannot pin '{tensor_type}' only dense CPU tensors can be pinned"
