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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simcuda.memory import DeviceMemory

if TYPE_CHECKING:
    import torch

    from simcuda.simulation import Simulation

RUNNER_ENV = "SIMCUDA_RUNNER_GPUS"
MAX_GPUS = 8
_PHILOX_STATE = struct.Struct("<Qq")  # CUDA's generator state: seed, offset (16 bytes)
_SNAPSHOTS_KEPT = 256  # exact restores of states handed out, per device (oldest dropped first)
# Mixed into a device's seed for its CPU generator: under one seed CUDA's numbers differ from the
# CPU's, and a test that expects them equal must fail here as it does on a GPU.
_CUDA_STREAM = 0x5EED_C0DA_0000_0001


class RunnerConfigError(ValueError):
    """SIMCUDA_RUNNER_GPUS holds something other than a GPU count from 1 to 8."""


def runner_gpus(environ: Mapping[str, str]) -> int | None:
    """The simulated runner's GPU count from the environment; None when the variable is unset or
    empty; a one-line RunnerConfigError for anything but 1 to 8."""
    text = environ.get(RUNNER_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or not 1 <= int(text) <= MAX_GPUS:
        raise RunnerConfigError(f"{RUNNER_ENV}={text!r}: expected a GPU count from 1 to {MAX_GPUS}")
    return int(text)


def gpu_uuid(physical: int) -> str:
    """A stable, plainly simulated UUID for the runner's GPU `physical`."""
    return f"GPU-51cda000-0000-4000-8000-{physical:012d}"


def visible_gpus(gpus: int, cuda_visible_devices: str | None) -> list[int]:
    """The physical GPUs a process sees, in its cuda:N order, as CUDA reads CUDA_VISIBLE_DEVICES:
    unset means all; entries (indices or UUIDs) are taken up to the first invalid or repeated one."""
    if cuda_visible_devices is None:
        return list(range(gpus))
    by_name = {**{str(index): index for index in range(gpus)}, **{gpu_uuid(index): index for index in range(gpus)}}
    seen: list[int] = []
    for entry in cuda_visible_devices.split(","):
        physical = by_name.get(entry.strip())
        if physical is None or physical in seen:
            break
        seen.append(physical)
    return seen


@dataclass(frozen=True)
class SimulatedDeviceProperties:
    """What `torch.cuda.get_device_properties` answers on the runner: an H100's figures (the
    capability decides library paths: bf16, TF32), under a name no one takes for a real GPU."""

    name: str
    uuid: str
    major: int = 9
    minor: int = 0
    total_memory: int = 80 * 2**30
    multi_processor_count: int = 132
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    warp_size: int = 32
    max_threads_per_multi_processor: int = 2048
    L2_cache_size: int = 50 * 2**20
    pci_bus_id: int = 0
    pci_device_id: int = 0
    pci_domain_id: int = 0


def device_properties(physical: int) -> SimulatedDeviceProperties:
    return SimulatedDeviceProperties(name="simcuda simulated GPU (no real GPU)", uuid=gpu_uuid(physical), pci_bus_id=physical)


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
        import torch

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
    def drawing(self, index: int):  # noqa: ANN201 - a generator context manager
        """Run a random op on cuda:`index`: the CPU generator holds the device's state meanwhile."""
        import torch

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
        import torch

        self.initial_seed(index)
        packed = _PHILOX_STATE.pack(self._seed[index], self._offset[index])
        self._snapshots[(index, packed)] = self._cpu_state[index].clone()
        while len(self._snapshots) > _SNAPSHOTS_KEPT * MAX_GPUS:
            self._snapshots.pop(next(iter(self._snapshots)))
        return torch.frombuffer(bytearray(packed), dtype=torch.uint8)

    def set_state(self, index: int, state: torch.Tensor) -> None:
        import torch

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
        from simcuda.simulation import simulated_cuda

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


_PROCESS: list[Runner] = []  # the runner of this process, once started


def running() -> Runner | None:
    """This process's simulated runner, or None on a real machine."""
    return _PROCESS[0] if _PROCESS else None


def start_from_environment(environ: Mapping[str, str] = os.environ) -> Runner | None:
    """Start the runner SIMCUDA_RUNNER_GPUS asks for (once per process); None when it asks none.
    A process that is not a pytest session calls this before its first torch.cuda question."""
    gpus = runner_gpus(environ)
    if gpus is None or _PROCESS:
        return running()
    _PROCESS.append(Runner(gpus, environ).open())
    return _PROCESS[0]


def stop() -> None:
    """End this process's runner (pytest's unconfigure): torch as it was before."""
    while _PROCESS:
        _PROCESS.pop().close()


def describe_runner(runner: Runner) -> str:
    """For titles and reports: what ran, and that no GPU did."""
    return f"simulated {runner.gpus}-GPU runner: no real GPU"
