"""The simulated runner's settings, torch-free: what the plugin reads before any test
(`SIMCUDA_RUNNER_GPUS`), the GPUs a process sees (`CUDA_VISIBLE_DEVICES`) and what
`torch.cuda.get_device_properties` answers. The process's runner is state.py's slot; its GPUs
are gpus.py, the runner itself runner.py; pytest sessions and a matrix job that has no
torch read this alone."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simcuda.state import ProcessRunner

RUNNER_ENV = "SIMCUDA_RUNNER_GPUS"
MAX_GPUS = 8


class RunnerConfigError(ValueError):
    """SIMCUDA_RUNNER_GPUS holds something other than a GPU count from 1 to 8."""


def runner_gpus(environ: Mapping[str, str]) -> int | None:
    """The simulated runner's GPU count from the environment; None when the variable is unset or
    empty; a one-line RunnerConfigError for anything but 1 to 8."""
    text = environ.get(RUNNER_ENV, "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_GPUS:  # isdigit alone takes '²'
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


def describe_runner(runner: ProcessRunner) -> str:
    """For titles and reports: what ran, and that no GPU did."""
    return f"simulated {runner.gpus}-GPU runner: no real GPU"
