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
from typing import cast

from simcuda import state
from simcuda.context import simulated_cuda
from simcuda.devices import runner_gpus
from simcuda.gpus import RunnerGpus
from simcuda.simulation import Simulation
from simcuda.state import PROCESS_RUNNER


class Runner(RunnerGpus):
    """The process's simulated runner: its GPUs (gpus.py) and the simulation it runs on them."""

    def __init__(self, gpus: int, environ: Mapping[str, str] = os.environ) -> None:
        super().__init__(gpus, environ)
        self.simulation: Simulation | None = None
        self._context = contextlib.ExitStack()
        self._refusals_read = 0

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

    def real_cuda_change(self) -> str:
        """What the real CUDA did since the last call, in words; "" for nothing (real_cuda.py)."""
        return self.simulation.real_cuda.change() if self.simulation is not None else ""


def start_from_environment(environ: Mapping[str, str] = os.environ) -> Runner | None:
    """Start the runner SIMCUDA_RUNNER_GPUS asks for (once per process); None when it asks none.
    A process that is not a pytest session calls this before its first torch.cuda question."""
    gpus = runner_gpus(environ)
    if gpus is None or PROCESS_RUNNER:
        return running()
    runner = Runner(gpus, environ).open()
    PROCESS_RUNNER.append(runner)
    return runner


def running() -> Runner | None:
    """This process's simulated runner, typed as this module makes it (state.running: torch-free)."""
    # The slot holds Runners alone (start_from_environment fills it); state.py names them by what
    # its torch-free readers read.
    return cast("Runner | None", state.running())


def stop() -> None:
    """End this process's runner (pytest's unconfigure): torch as it was before."""
    while PROCESS_RUNNER:
        cast("Runner", PROCESS_RUNNER.pop()).close()
