"""One `simulated_cuda()` context's state: device count, current device, allocation log,
refusals, its streams and CUDA-graph trees. The context manager that opens one is context.py."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from types import FrameType
from typing import cast

import torch

from simcuda import rules
from simcuda.allocations import Allocation, Noted, as_allocation, foreign, note, text_of
from simcuda.generators import CPU_STREAM, DeviceGenerators, SharedWithCpu
from simcuda.gpus import RunnerGpus
from simcuda.graphs import GraphTrees
from simcuda.real_cuda import RealCudaWatch
from simcuda.state import OPEN_SIMULATIONS, Devices
from simcuda.streams import StreamTable

_SERIALS = itertools.count(1)


class Quiet:
    """Silences a simulation's log while held (a class, not a generator-based context manager:
    that costs microseconds, and every factory call holds one)."""

    __slots__ = ("sim",)

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def __enter__(self) -> None:
        self.sim._quiet += 1

    def __exit__(self, *exc_info: object) -> None:
        self.sim._quiet -= 1


class Simulation:
    """The state of one `simulated_cuda()` context: device count, current device, the log of every
    tensor made, every feature it refused (SimulationUnsupported, caught or not), and its devices'
    CUDA generators (fresh, as in a process whose CUDA just started; `shared_generator`: the CPU's,
    generators.SharedWithCpu). A runner's simulation (runner.py) counts its devices as the runner
    sees them, draws from the runner's generators and keeps no log: it lasts a whole session."""

    def __init__(self, device_count: int | Callable[[], int], runner: RunnerGpus | None = None, shared_generator: bool = False) -> None:
        self.devices = Devices(device_count)
        self.runner = runner
        self.serial = next(_SERIALS) * (1 if runner is None else -1)  # tags its tensors (tensor.py); a runner's negative
        self._noted: list[Noted] = []  # the log, as ops note it (allocations.note)
        self._allocations: list[Allocation] = []  # the part of it read so far, as Allocations
        self._unlogged: frozenset[str] = frozenset()  # devices the log leaves out (log_only_outside)
        self.refusals: list[str] = []
        self.real_cuda = RealCudaWatch()  # the real CUDA as it was when the simulation opened
        self.generators: DeviceGenerators | SharedWithCpu = (
            runner.generators if runner is not None else SharedWithCpu() if shared_generator else DeviceGenerators(CPU_STREAM)
        )
        self.graph_trees = GraphTrees()
        self.streams = StreamTable(self.devices)  # its pinned memory joins when the context opens
        self._quiet = 0
        self._quieting = Quiet(self)

    @property
    def device_count(self) -> int:
        return self.devices.count

    @property
    def current(self) -> int:
        return self.devices.current

    def normalize(self, device: torch.device | str | int) -> torch.device:
        return rules.normalize(device, self.devices)

    def index_of(self, device: torch.device | str | int | None = None) -> int:
        """torch.cuda's `device` argument as an index (None or a negative index: the current one)."""
        return rules.index_of(device, self.devices)

    def set_device(self, device: torch.device | str | int) -> None:
        """torch.cuda.set_device: a cuda device (an int is an index) becomes the current one."""
        target = self.normalize(device)
        if target.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {target}")  # torch.cuda._get_device_index's text
        self.devices.set_current(target.index)

    def log(self, op: str, tensor: torch.Tensor, device: torch.device, source: torch.device | None = None, start: FrameType | None = None) -> None:
        """One tensor made (or copied) on `device`: logged, and reported to a compiled run's capture.
        `start`: a frame at or inside the caller to name (allocations.caller_frame)."""
        if self._quiet:
            return
        if self.runner is None:
            if not self._unlogged or text_of(device) not in self._unlogged:
                note(self._noted, op, tensor, device, source, start)
        elif device.type == "cuda":
            if not self.runner.started:
                self.runner.start_cuda()  # a tensor made on a GPU starts CUDA
            self.runner.memory.made(device.index, tensor)
        if (capture := self.graph_trees.capture) is not None:  # a compiled run: graphs.py
            capture.add(tensor, on_cpu=device.type != "cuda")

    def watches_plain_cpu_ops(self) -> bool:
        """Whether an op of plain CPU tensors matters to it: the log keeps the CPU's tensors, the
        host may touch a buffer a copy shares with a stream, or a compiled run's capture is
        counting its CPU outputs. Where none does, such a call may skip the modes (functions.py)."""
        return (self.runner is None and "cpu" not in self._unlogged) or bool(self.streams.host_buffers) or self.graph_trees.capture is not None

    def log_only_outside(self, allowed: set[str]) -> None:
        """From now on, log only what is made on, or copied to, a device outside `allowed`: all a
        run that asks for foreign allocations alone reads (runs.py), and noting an op's caller
        is a good part of what a simulated op costs. Asking `foreign_allocations` with a set that
        does not contain `allowed` is then a ValueError: the log cannot answer it."""
        self._unlogged = frozenset(allowed)

    @property
    def allocations(self) -> list[Allocation]:
        """The log: every tensor made on a device, and every copy between devices, in order (only
        those outside the devices `log_only_outside` named, once called)."""
        if len(self._allocations) < len(self._noted):
            self._allocations += map(as_allocation, self._noted[len(self._allocations) :])
        return self._allocations

    def quiet(self) -> Quiet:
        """`with sim.quiet():` the CPU half of a call logged once by its caller on the simulated device."""
        return self._quieting

    def recorded_cuda_graphs(self, device_index: int) -> int:
        """CUDA graphs `torch.compile` recorded on the device (graphs.py), as torch's tree counts them."""
        return self.graph_trees.recorded(device_index)

    def devices_touched(self) -> set[str]:
        return {entry.device for entry in self.allocations}

    def foreign_allocations(self, allowed: set[str], since: int = 0) -> list[Allocation]:
        """Log entries (from the `since`-th on) made on, or copied to, a device outside `allowed`."""
        if not self._unlogged <= allowed:
            left_out = ", ".join(sorted(self._unlogged - allowed))
            raise ValueError(f"this simulation does not log allocations on {left_out} (log_only_outside): allow them to ask")
        return foreign(self._noted[since:], allowed)


def current_simulation() -> Simulation | None:
    """The innermost `simulated_cuda()` context open now, or None."""
    # The stack holds Simulations alone (context.py opens them); state.py names them by what the
    # layers below this one read.
    return cast("Simulation", OPEN_SIMULATIONS[-1]) if OPEN_SIMULATIONS else None
