"""A suite's body run as pytest runs it on `simcuda:1`: inside `simulated_cuda()` with two devices,
the current one `cuda:1`, so a library's "made on the default GPU" shows (the fault tests')."""

from __future__ import annotations

from collections.abc import Callable

from simcuda import simulated_cuda


def run_on_simulated_cuda1(suite_body: Callable[..., None], *arguments: object) -> None:
    """`suite_body("cuda:1", simulation, *arguments)` on the simulated device."""
    with simulated_cuda(device_count=2) as simulation:
        simulation.set_device(1)
        suite_body("cuda:1", simulation, *arguments)
