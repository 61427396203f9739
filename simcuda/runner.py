"""The simulated GPU runner: a whole process, and every child that inherits its environment, as
on a machine with N GPUs where CUDA can start (`SIMCUDA_RUNNER_GPUS=N`, 1 to 8).

pytest sessions start it from the plugin (pytest_plugin.py) before the project's first conftest,
so xdist workers, pytest-isolated's children, tox environments (pass the variable through) and
any pytest a script starts inherit it; another Python process calls `start_from_environment()`.
Under it `torch.cuda` answers as the runner: `is_available`, `device_count` (honouring
`CUDA_VISIBLE_DEVICES`, read once, at the first question, as CUDA reads it), lazy init and
`is_initialized()`, device properties, one generator per device with Philox-shaped states (seed
and offset, 16 bytes), `synchronize`, streams and events, the memory statistics (memory.py);
`cuda:N` tensors hold CPU data (the simulated device, simulation.py). What the simulated device
refuses it refuses here too.

It is a rehearsal, never a GPU: everything it runs is simulated evidence at best.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from simcuda.context import simulated_cuda
from simcuda.devices import PROCESS_RUNNER, SimulatedDeviceProperties, device_properties, runner_gpus, running, visible_gpus
from simcuda.generators import DeviceGenerators
from simcuda.memory import DeviceMemory

if TYPE_CHECKING:
    from simcuda.simulation import Simulation


class Runner:
    """The process's simulated runner: its GPUs, which of them this process sees (fixed at the
    first question), whether CUDA has started, the generators and the simulation it runs."""

    def __init__(self, gpus: int, environ: Mapping[str, str] = os.environ) -> None:
        self.gpus = gpus
        self._environ = environ
        self._visible: list[int] | None = None
        self.started = False
        self.generators = DeviceGenerators()
        self.memory = DeviceMemory()
        self.simulation: Simulation | None = None
        self._context = contextlib.ExitStack()
        self._refusals_read = 0

    @property
    def visible(self) -> list[int]:
        """Read from CUDA_VISIBLE_DEVICES at each question until CUDA starts (torch counts through
        NVML until then), fixed from then on (as the CUDA context is)."""
        if self._visible is not None:
            return self._visible
        return visible_gpus(self.gpus, self._environ.get("CUDA_VISIBLE_DEVICES"))

    def device_count(self) -> int:
        return len(self.visible)

    def start_cuda(self) -> None:
        """CUDA's lazy init: from here on `is_initialized()` is True (no device: CUDA's error)."""
        if not self.started:
            self._visible = self.visible
            if not self._visible:
                raise RuntimeError("No CUDA GPUs are available")  # torch's lazy init, CUDA_VISIBLE_DEVICES empty
        self.started = True

    def properties(self, index: int) -> SimulatedDeviceProperties:
        return device_properties(self.visible[index])

    def open(self) -> Runner:
        self.simulation = self._context.enter_context(simulated_cuda(self.device_count, runner=self))
        return self

    def close(self) -> None:
        self._context.close()
        self.simulation = None

    def new_refusals(self) -> list[str]:
        """The features the runner refused since the last call (one test phase's)."""
        refusals = self.simulation.refusals[self._refusals_read :] if self.simulation is not None else []
        self._refusals_read += len(refusals)
        return refusals


def start_from_environment(environ: Mapping[str, str] = os.environ) -> Runner | None:
    """Start the runner SIMCUDA_RUNNER_GPUS asks for (once per process); None when it asks none.
    A process that is not a pytest session calls this before its first torch.cuda question."""
    gpus = runner_gpus(environ)
    if gpus is None or PROCESS_RUNNER:
        return running()
    PROCESS_RUNNER.append(Runner(gpus, environ).open())
    return PROCESS_RUNNER[0]


def stop() -> None:
    """End this process's runner (pytest's unconfigure): torch as it was before."""
    while PROCESS_RUNNER:
        PROCESS_RUNNER.pop().close()
