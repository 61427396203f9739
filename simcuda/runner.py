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
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch

from simcuda.context import simulated_cuda
from simcuda.devices import MAX_GPUS, PROCESS_RUNNER, SimulatedDeviceProperties, device_properties, runner_gpus, running, visible_gpus
from simcuda.memory import DeviceMemory

if TYPE_CHECKING:
    from simcuda.simulation import Simulation

_PHILOX_STATE = struct.Struct("<Qq")  # CUDA's generator state: seed, offset (16 bytes)
_SNAPSHOTS_KEPT = 256  # exact restores of states handed out, per device (oldest dropped first)
# Mixed into a device's seed for its CPU generator: under one seed CUDA's numbers differ from the
# CPU's, and a test that expects them equal must fail here as it does on a GPU.
_CUDA_STREAM = 0x5EED_C0DA_0000_0001


class DeviceGenerators:
    """One CUDA generator per device, as CUDA keeps them: seeded lazily, states of 16 bytes (seed,
    offset). Random ops on cuda:N draw from a CPU generator state of the device's own, so CPU and
    CUDA draws are separate streams as on a GPU (not CUDA's numbers). A state this object handed
    out restores exactly; any other 16-byte state reseeds from its seed and offset."""

    def __init__(self) -> None:
        self._default_seed = 67280421310721  # c10's; manual_seed_all sets it without counting devices
        self._seed: dict[int, int] = {}
        self._offset: dict[int, int] = {}
        self._cpu_state: dict[int, torch.Tensor] = {}
        self._snapshots: dict[tuple[int, bytes], torch.Tensor] = {}

    def manual_seed(self, index: int, seed: int) -> None:
        seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self._seed[index], self._offset[index] = seed, 0
        self._cpu_state[index] = torch.Generator().manual_seed(seed ^ _CUDA_STREAM).get_state()

    def manual_seed_all(self, seed: int) -> None:
        """Every device's seed, those not yet counted included (torch defers it to CUDA's start)."""
        self._default_seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self._seed.clear()

    def initial_seed(self, index: int) -> int:
        if index not in self._seed:
            self.manual_seed(index, self._default_seed)
        return self._seed[index]

    @contextlib.contextmanager
    def drawing(self, index: int):
        """Run a random op on cuda:`index`: the CPU generator holds the device's state meanwhile."""
        self.initial_seed(index)
        cpu = torch.default_generator.get_state()
        torch.default_generator.set_state(self._cpu_state[index])
        try:
            yield
        finally:
            self._cpu_state[index] = torch.default_generator.get_state()
            self._offset[index] += 4  # one curand4 call per thread, at least
            torch.default_generator.set_state(cpu)

    def get_state(self, index: int) -> torch.Tensor:
        self.initial_seed(index)
        packed = _PHILOX_STATE.pack(self._seed[index], self._offset[index])
        self._snapshots[(index, packed)] = self._cpu_state[index].clone()
        while len(self._snapshots) > _SNAPSHOTS_KEPT * MAX_GPUS:
            self._snapshots.pop(next(iter(self._snapshots)))
        return torch.frombuffer(bytearray(packed), dtype=torch.uint8)

    def set_state(self, index: int, state: torch.Tensor) -> None:
        if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8 or state.numel() != _PHILOX_STATE.size:
            raise RuntimeError("RNG state is wrong size")  # CUDAGeneratorImpl::set_state's text
        packed = bytes(state.contiguous().tolist())
        seed, offset = _PHILOX_STATE.unpack(packed)
        snapshot = self._snapshots.get((index, packed))
        if snapshot is None:
            snapshot = torch.Generator().manual_seed((seed ^ _CUDA_STREAM ^ (offset * 0x9E3779B97F4A7C15)) & 0xFFFF_FFFF_FFFF_FFFF).get_state()
        self._seed[index], self._offset[index], self._cpu_state[index] = seed, offset, snapshot.clone()


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
