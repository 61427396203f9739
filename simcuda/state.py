"""simcuda's state, torch-free, at the bottom of the package: the simulations open now (innermost
last), the process's simulated runner, and one simulation's devices (how many, which is current,
a device index as CUDA takes it).

The layers above read this state and hand each other small parts of it; none holds a layer above
its own. What a layer below the simulation reads of an open one, and what a torch-free reader
reads of the runner, are the protocols here, each with one implementation: `OpenSimulation` is
simulation.Simulation, `HostReads` streams.StreamTable, `ProcessRunner` runner.Runner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import torch  # a name for annotations: this module never imports torch

INVALID_ORDINAL = "CUDA error: invalid device ordinal"


class Devices:
    """One simulation's CUDA devices: how many (a count, or a callable the runner answers at each
    question: CUDA_VISIBLE_DEVICES is read until CUDA starts), and which is current."""

    __slots__ = ("_count", "current")

    def __init__(self, count: int | Callable[[], int]) -> None:
        self._count = count
        self.current = 0

    @property
    def count(self) -> int:
        count = self._count
        return count if isinstance(count, int) else count()

    def index(self, index: int | None) -> int:
        """A device index as CUDA takes it: None is the current device; an index past the count is
        CUDA's invalid ordinal (a RuntimeError, as torch raises it)."""
        index = self.current if index is None else index
        if not 0 <= index < self.count:
            raise RuntimeError(INVALID_ORDINAL)
        return index

    def set_current(self, index: int) -> None:
        """torch.cuda.set_device of an index: checked as CUDA checks it."""
        self.current = self.index(index)


class HostReads(Protocol):
    """An open simulation's streams as a simulated tensor's host read needs them (streams.StreamTable)."""

    def host_read(self, tensor: torch.Tensor) -> None: ...


class OpenSimulation(Protocol):
    """What the layers below simulation.py read of an open simulation (read-only): the serial that
    tags its tensors (negative: the runner's), its devices and its streams."""

    @property
    def serial(self) -> int: ...
    @property
    def devices(self) -> Devices: ...
    @property
    def streams(self) -> HostReads: ...


class ProcessRunner(Protocol):
    """What a torch-free reader (a pytest plugin, a report) reads of the process's runner (runner.Runner)."""

    @property
    def gpus(self) -> int: ...

    def new_refusals(self) -> list[str]: ...

    def real_cuda_change(self) -> str: ...


# The simulations open now, innermost last (context.py opens and closes them).
OPEN_SIMULATIONS: list[OpenSimulation] = []
# This process's runner, once started (runner.start_from_environment; runner.stop empties it).
PROCESS_RUNNER: list[ProcessRunner] = []


def running() -> ProcessRunner | None:
    """This process's simulated runner, or None on a real machine."""
    return PROCESS_RUNNER[0] if PROCESS_RUNNER else None


def is_open(serial: int) -> bool:
    """Whether the simulation that tagged a tensor with `serial` is open now."""
    return any(sim.serial == serial for sim in OPEN_SIMULATIONS)
