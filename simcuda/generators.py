"""The simulated devices' CUDA generators: one per device, as CUDA keeps them, apart from the
CPU's. A simulation draws its devices' random numbers from them (dispatch.py, functions.py), and
`torch.cuda`'s RNG functions answer from them (stand_ins.py)."""

from __future__ import annotations

import contextlib
import struct

import torch

from simcuda.devices import MAX_GPUS

_PHILOX_STATE = struct.Struct("<Qq")  # CUDA's generator state: seed, offset (16 bytes)
_SNAPSHOTS_KEPT = 256  # exact restores of states handed out, per device (oldest dropped first)
# Mixed into a runner's device seeds: under one seed its CUDA numbers differ from the CPU's, and a
# test that expects them equal fails there as it does on a GPU (runner.py).
CUDA_STREAM = 0x5EED_C0DA_0000_0001
# A simulation's own devices: under one seed the CPU's numbers, so a simulated run compares with
# its CPU run under one seed (the harness's sweeps do), as long as each draws on one device.
CPU_STREAM = 0


class DeviceGenerators:
    """One CUDA generator per device, as CUDA keeps them: seeded lazily, states of 16 bytes (seed,
    offset). Random ops on cuda:N draw from a CPU generator state of the device's own, so CPU and
    CUDA draws are separate streams as on a GPU (not CUDA's numbers; `stream` is mixed into each
    seed). A state this object handed out restores exactly; any other 16-byte state reseeds from
    its seed and offset."""

    def __init__(self, stream: int = CUDA_STREAM) -> None:
        self._stream = stream
        self._default_seed = 67280421310721  # c10's; manual_seed_all sets it without counting devices
        self._seed: dict[int, int] = {}
        self._offset: dict[int, int] = {}
        self._cpu_state: dict[int, torch.Tensor] = {}
        self._snapshots: dict[tuple[int, bytes], torch.Tensor] = {}

    def manual_seed(self, index: int, seed: int) -> None:
        seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self._seed[index], self._offset[index] = seed, 0
        self._cpu_state[index] = torch.Generator().manual_seed(seed ^ self._stream).get_state()

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
            snapshot = torch.Generator().manual_seed((seed ^ self._stream ^ (offset * 0x9E3779B97F4A7C15)) & 0xFFFF_FFFF_FFFF_FFFF).get_state()
        self._seed[index], self._offset[index], self._cpu_state[index] = seed, offset, snapshot.clone()


class SharedWithCpu:
    """`DeviceGenerators`' answers for devices that all draw from the CPU's generator: one
    stream, so a simulated run gives its CPU run's numbers under one seed whichever device each
    draw is on (the harness's simulated oracles compare so). Not a GPU's behaviour: opt-in."""

    def manual_seed(self, index: int, seed: int) -> None:
        torch.default_generator.manual_seed(seed)  # torch.manual_seed calls this stand-in: no recursion

    def manual_seed_all(self, seed: int) -> None:
        torch.default_generator.manual_seed(seed)

    def initial_seed(self, index: int) -> int:
        return torch.default_generator.initial_seed()

    def drawing(self, index: int) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def get_state(self, index: int) -> torch.Tensor:
        return torch.get_rng_state()

    def set_state(self, index: int, state: torch.Tensor) -> None:
        torch.set_rng_state(state)
