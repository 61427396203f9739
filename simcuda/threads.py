"""Threads started while a simulation is open: each runs under a guard that refuses CUDA by name.

Modes are thread-local, so a call in another thread (a DataLoader's pin thread, a user's worker)
never meets the simulation's. Where the real CUDA never started, its C++ bindings ask
`torch.cuda._lazy_init` first, and the stand-in refuses (stand_ins.py). Once a real GPU was used
in the process, C++ remembers the start and asks no more: `torch.zeros(2, device="cuda:1")` from a
worker thread reached the real device (an H200: CUDA's invalid ordinal; `cuda:0` would allocate on
it). The guard is a dispatch mode each such thread enters at its first call (`threading.setprofile`
runs a hook there before `run()`): an op that names a CUDA device or reads a real CUDA tensor is
refused while the simulation is open; a simulated tensor's op goes on to its own dispatch, as it
did without the guard, and the pinning kernels run as they do in the pin thread (pinning.py).

Threads started before the simulation opened, or with `_thread` directly, are not guarded.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from simcuda.allocations import caller_summary
from simcuda.tensor import is_simulated
from simcuda.unsupported import SimulationUnsupported

OTHER_THREAD = "CUDA used from another thread (modes are thread-local)"
aten = torch.ops.aten
# The pin thread's ops: the simulation's process-wide kernels answer them on the CPU (pinning.py).
_PINNING = frozenset({aten.pin_memory.default, aten._pin_memory.default, aten.is_pinned.default})


def reaches_real_cuda(args: tuple, kwargs: dict) -> bool:
    """Whether an ATen call names a CUDA device or reads a real (not simulated) CUDA tensor."""
    device = kwargs.get("device")
    if device is not None and torch.device(device).type == "cuda":
        return True
    leaves, _ = tree_flatten((args, kwargs))
    return any(isinstance(leaf, torch.Tensor) and leaf.is_cuda and not is_simulated(leaf) for leaf in leaves)


class OtherThreadGuard(TorchDispatchMode):
    """Refuses what would reach the real CUDA from this thread while `is_open()` holds."""

    def __init__(self, is_open: Callable[[], bool]) -> None:
        super().__init__()
        self.is_open = is_open

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in _PINNING and self.is_open() and reaches_real_cuda(args, kwargs):
            raise SimulationUnsupported(OTHER_THREAD, caller_summary())
        return func(*args, **kwargs)


@contextlib.contextmanager
def other_threads_guarded(is_open: Callable[[], bool]) -> Iterator[None]:
    """Every thread `threading` starts in the block enters an OtherThreadGuard at its first call;
    a profile hook set before (a profiler's) still runs in it, from that call on."""
    previous = threading.getprofile()

    def first_call(frame: Any, event: str, arg: Any) -> Any:
        sys.setprofile(previous)
        OtherThreadGuard(is_open).__enter__()  # left with the thread: modes are thread-local
        return previous(frame, event, arg) if previous is not None else None

    threading.setprofile(first_call)
    try:
        yield
    finally:
        threading.setprofile(previous)
