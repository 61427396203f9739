"""Threads started while a simulation is open: each runs under a guard that refuses CUDA by name.

Modes are thread-local, so a call in another thread (a DataLoader's pin thread, a user's worker)
never meets the simulation's. Where the real CUDA never started, its C++ bindings ask
`torch.cuda._lazy_init` first, and the stand-in refuses (stand_ins.py). Once a real GPU was used
in the process, C++ remembers the start and asks no more: `torch.zeros(2, device="cuda:1")` from a
worker thread reached the real device (an H200: CUDA's invalid ordinal; `cuda:0` would allocate on
it). The guard is two modes each such thread enters at its first call (`threading.setprofile` runs
a hook there before `run()`): while the simulation is open, a dispatch mode refuses an ATen op that
names a CUDA device or reads a real CUDA tensor, and a function mode a torch function naming one by
its `device` keyword (`torch.tensor` and `torch.as_tensor` copy beneath the dispatcher). A
simulated tensor's op goes on to its own dispatch, as it did without the guard, pinning runs as it
does in the pin thread (pinning.py), and fake tensors (FakeTensorMode: `torch.export`, `make_fx`)
pass, touching no device.

Not guarded: threads started before the simulation opened or with `_thread` directly, a nested
tensor's constructor (its device is positional) and `torch.UntypedStorage(device=)`. Where the real
CUDA never started the lazy init refuses those too; where it started, the pytest plugin's watch of
the real CUDA (real_cuda.py) sees an allocation, and a missing ordinal is read as a refusal
(unsupported.py).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from simcuda.allocations import caller_summary
from simcuda.tensor import is_simulated
from simcuda.unsupported import SimulationUnsupported

OTHER_THREAD = "CUDA used from another thread (modes are thread-local)"


def names_cuda(kwargs: dict) -> bool:
    """Whether a call's `device` keyword is a CUDA device (the pinning ops take theirs by position,
    and the simulation's kernels answer them, pinning.py); never under a FakeTensorMode, whose calls
    touch no device."""
    device = kwargs.get("device")
    if device is None or torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None:
        return False
    return torch.device(device).type == "cuda"


def reaches_real_cuda(args: tuple, kwargs: dict) -> bool:
    """Whether an ATen call names a CUDA device or reads a real (not simulated, not fake) CUDA
    tensor."""
    if names_cuda(kwargs):
        return True
    leaves, _ = tree_flatten((args, kwargs))
    return any(isinstance(leaf, torch.Tensor) and leaf.is_cuda and not (is_simulated(leaf) or isinstance(leaf, FakeTensor)) for leaf in leaves)


class _WhileOpen:
    """A mode of a guarded thread: it refuses a call that `reached` the real CUDA while `is_open()`."""

    def __init__(self, is_open: Callable[[], bool]) -> None:
        super().__init__()
        self.is_open = is_open

    def refuse_if(self, reached: Callable[[], bool]) -> None:
        if self.is_open() and reached():
            raise SimulationUnsupported(OTHER_THREAD, caller_summary())


class OtherThreadGuard(_WhileOpen, TorchDispatchMode):
    """Refuses an ATen op that would reach the real CUDA from this thread (reaches_real_cuda)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Else each op goes through torch._dynamo.disable: Dynamo imported at the thread's first op
        # (a second here), every op several times slower, and the guard, which stays with its thread
        # after the simulation, kept torch.compile from compiling any frame there (torch 2.14).
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.refuse_if(lambda: reaches_real_cuda(args, kwargs))
        return func(*args, **kwargs)


class OtherThreadConstructors(_WhileOpen, TorchFunctionMode):
    """Refuses a torch function naming a CUDA device by its `device` keyword: `torch.tensor` and
    `torch.as_tensor` copy beneath the dispatcher, where OtherThreadGuard never sees the device."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.refuse_if(lambda: names_cuda(kwargs))
        return func(*args, **kwargs)


@contextlib.contextmanager
def other_threads_guarded(is_open: Callable[[], bool]) -> Iterator[None]:
    """Every thread `threading` starts in the block enters both guards at its first call;
    a profile hook set before (a profiler's) still runs in it, from that call on, and one set inside
    the block is left in place at its end."""
    previous = threading.getprofile()

    def first_call(frame: Any, event: str, arg: Any) -> Any:
        sys.setprofile(previous)
        OtherThreadGuard(is_open).__enter__()  # both left with the thread: modes are thread-local
        OtherThreadConstructors(is_open).__enter__()
        return previous(frame, event, arg) if previous is not None else None

    threading.setprofile(first_call)
    try:
        yield
    finally:
        if threading.getprofile() is first_call:
            threading.setprofile(previous)
