"""`torch.save` / `torch.load` of simulated tensors: saved as their CPU data and device, loaded
back on that simulated device, as a CUDA tensor loads back on CUDA.

torch.load's unpickler only calls functions it is told are safe (weights_only, the default):
rebuild_simulated is, while a simulation runs (`torch.serialization.safe_globals`). A
`map_location` given to torch.load applies as it would to a CUDA tensor's storage (a device, a
string, or a {saved: target} dict; a callable is not followed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

_MAP_LOCATION: list[Any] = []  # the map_location of the torch.load calls in progress


def _target(device: str) -> str:
    location = _MAP_LOCATION[-1] if _MAP_LOCATION else None
    if isinstance(location, dict):
        return str(location.get(device, device))
    if isinstance(location, (str, torch.device)):
        return str(location)
    return device


def rebuild_simulated(elem: torch.Tensor, device: str, requires_grad: bool) -> torch.Tensor:
    from simcuda.simulation import current_simulation
    from simcuda.tensor import SimulatedTensor

    target = torch.device(_target(device))
    if target.type != "cuda":
        return elem.to(target).requires_grad_(requires_grad)
    simulation = current_simulation()
    if simulation is None:  # torch's own refusal on a machine without CUDA
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
            "If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') "
            "to map your storages to the CPU."
        )
    return SimulatedTensor(elem, simulation.normalize(target)).requires_grad_(requires_grad)


def simulated_load(original: Callable[..., Any]) -> Callable[..., Any]:
    """torch.load, remembering its map_location for rebuild_simulated."""

    def load(*args: Any, **kwargs: Any) -> Any:
        _MAP_LOCATION.append(kwargs.get("map_location", args[1] if len(args) > 1 else None))
        try:
            return original(*args, **kwargs)
        finally:
            _MAP_LOCATION.pop()

    return load


@contextlib.contextmanager
def loadable() -> Iterator[None]:
    """rebuild_simulated is a safe global for torch.load while the block runs."""
    with torch.serialization.safe_globals([rebuild_simulated]):
        yield
