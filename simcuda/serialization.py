"""`torch.save` / `torch.load` of simulated tensors: saved as their CPU data and device, loaded
back on that simulated device, as a CUDA tensor loads back on CUDA.

torch.load's unpickler only calls functions it is told are safe (weights_only, the default):
rebuild_simulated is, while a simulation runs (`torch.serialization.safe_globals`). A
`map_location` given to torch.load applies as it would to a CUDA tensor's storage (a device, a
string, or a {saved: target} dict; a callable is not followed): storages bound for a CUDA device
load on the CPU, and the plain tensors on them (in the dicts, lists and tuples torch.load returns)
are shown on that simulated device.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import torch

from simcuda import rules
from simcuda.state import OPEN_SIMULATIONS
from simcuda.tensor import MAP_LOCATIONS, SimulatedTensor, load_target, rebuild_simulated

# Saved files name the function that rebuilds a simulated tensor; simcuda 0.2.5 and earlier named
# it here: both names are safe globals, so those files load too.
_REBUILD_NAMES = ["simcuda.tensor.rebuild_simulated", "simcuda.serialization.rebuild_simulated"]


def _placed(loaded: Any, targets: dict[int, torch.device]) -> Any:
    """The loaded object with each plain tensor whose storage was bound for a CUDA device shown
    on that simulated device (tensors inside dicts, lists and tuples; other objects as loaded)."""
    if isinstance(loaded, torch.Tensor) and not isinstance(loaded, SimulatedTensor):
        target = targets.get(loaded.untyped_storage().data_ptr())
        if target is None:
            return loaded
        return SimulatedTensor(loaded.detach(), rules.normalize(target, OPEN_SIMULATIONS[-1].devices)).requires_grad_(loaded.requires_grad)
    if isinstance(loaded, dict):  # a state_dict is an OrderedDict: copy() keeps its type
        placed = loaded.copy()
        placed.update({key: _placed(value, targets) for key, value in loaded.items()})
        return placed
    if type(loaded) in (list, tuple):
        return type(loaded)(_placed(value, targets) for value in loaded)
    return loaded


@functools.cache
def _signature(function: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(function)  # once: every simulation's context makes its torch.load


def simulated_load(original: Callable[..., Any]) -> Callable[..., Any]:
    """torch.load, remembering its map_location for rebuild_simulated; a map_location that sends
    storages to CUDA loads them on the CPU, and the tensors on them are placed afterwards."""

    signature = _signature(original)

    def load(*args: Any, **kwargs: Any) -> Any:
        call = signature.bind(*args, **kwargs)  # map_location by keyword or by position
        location = call.arguments.get("map_location")
        targets: dict[int, torch.device] = {}

        def to_cpu(storage: Any, saved: str) -> Any:
            target = load_target(saved, location)
            if torch.device(target).type != "cuda":
                return torch.serialization.default_restore_location(storage, target)
            targets[storage.data_ptr()] = torch.device(target)
            return storage

        MAP_LOCATIONS.append(location)
        try:
            if location is not None and not callable(location):
                call.arguments["map_location"] = to_cpu
            loaded = original(*call.args, **call.kwargs)
        finally:
            MAP_LOCATIONS.pop()
        return _placed(loaded, targets) if targets else loaded

    return load


@contextlib.contextmanager
def loadable() -> Iterator[None]:
    """rebuild_simulated is a safe global for torch.load while the block runs, by either name."""
    with torch.serialization.safe_globals([(rebuild_simulated, name) for name in _REBUILD_NAMES]):
        yield
