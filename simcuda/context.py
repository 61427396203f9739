"""`simulated_cuda()`: the context manager that opens a simulation, wiring its state
(simulation.py) to the modes that carry it out (dispatch.py, functions.py) and the stand-ins
for `torch.cuda` (stand_ins.py), and swapping everything back out at its end."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from simcuda.dispatch import SimulatedDispatch
from simcuda.functions import SimulatedFunctions
from simcuda.graphs import mark_step_restored
from simcuda.pinning import simulated_pinning
from simcuda.simulation import Simulation
from simcuda.stand_ins import swapped
from simcuda.state import OPEN_SIMULATIONS, is_open
from simcuda.tensor import modes_suspended
from simcuda.threads import other_threads_guarded
from simcuda.unsupported import refusals_logged_to

if TYPE_CHECKING:
    from simcuda.gpus import RunnerGpus

DEFAULT_DEVICE_COUNT = 2


@contextlib.contextmanager
def enclosing_modes_suspended() -> Iterator[None]:
    """A simulation opened inside another (a simcuda:N test under the runner) runs as one runs
    beside real CUDA: the enclosing one's modes are off the stacks until it ends, and the
    enclosing one's tensors are real CUDA tensors to it (dispatch.py)."""
    if not OPEN_SIMULATIONS:
        yield
        return
    with modes_suspended():
        yield


@contextlib.contextmanager
def simulated_cuda(
    device_count: int | Callable[[], int] = DEFAULT_DEVICE_COUNT, runner: RunnerGpus | None = None, shared_generator: bool = False
) -> Iterator[Simulation]:
    """Simulate `device_count` CUDA devices in this thread until the block ends (`runner`: the
    process's simulated runner, runner.py, whose simulation this is). Each device draws random
    numbers from a generator of its own, apart from the CPU's (seeded alike, it gives the CPU's
    numbers); with `shared_generator`, from the CPU's (generators.py)."""
    # No C++ device guard is ever opened for a simulated tensor (indexing.py, tensor.py), so the
    # real CUDA guard, in force on every machine with a GPU, is never reached: nothing here may
    # rely on torch._C._ensureCUDADeviceGuardSet(), a no-op wherever a GPU is visible.
    with _opened(Simulation(device_count, runner, shared_generator), module_functions=True) as sim:
        yield sim


@contextlib.contextmanager
def simulated_imports(device_count: int, current: int) -> Iterator[Simulation]:
    """A simulation for code that runs once, at import (pytest collecting a test module): its
    CUDA tensors are made on the simulated devices, `current` the current one, and outlive the
    block as a GPU's memory outlives a test. Only the modes and the tensor's own methods are
    swapped in: the names a module imports from torch stay torch's own."""
    with _opened(Simulation(device_count, None, False), module_functions=False) as sim:
        sim.set_device(current)
        yield sim


@contextlib.contextmanager
def _opened(sim: Simulation, module_functions: bool) -> Iterator[Simulation]:
    with contextlib.ExitStack() as stack:
        stack.enter_context(enclosing_modes_suspended())
        OPEN_SIMULATIONS.append(sim)
        stack.callback(OPEN_SIMULATIONS.remove, sim)
        stack.enter_context(refusals_logged_to(sim.refusals))
        stack.enter_context(mark_step_restored())
        sim.streams.pinned = stack.enter_context(simulated_pinning())
        stack.enter_context(other_threads_guarded(lambda: is_open(sim.serial)))
        for context in (swapped(sim, module_functions), SimulatedFunctions(sim), SimulatedDispatch(sim)):
            stack.enter_context(context)
        yield sim
