"""The simulated runner's GPUs as the simulation reads them: which of them the process sees
(fixed when CUDA starts), whether CUDA has started, their generators and their memory. The runner
that opens a simulation on them for a whole process is runner.py."""

from __future__ import annotations

import os
from collections.abc import Mapping

from simcuda.devices import SimulatedDeviceProperties, device_properties, visible_gpus
from simcuda.generators import DeviceGenerators
from simcuda.memory import DeviceMemory


class RunnerGpus:
    """The runner's GPUs: which of them this process sees (fixed at CUDA's start), whether CUDA has
    started, one generator and one memory account per device."""

    def __init__(self, gpus: int, environ: Mapping[str, str] = os.environ) -> None:
        self.gpus = gpus
        self._environ = environ
        self._visible: list[int] | None = None
        self.started = False
        self.generators = DeviceGenerators()
        self.memory = DeviceMemory()

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
