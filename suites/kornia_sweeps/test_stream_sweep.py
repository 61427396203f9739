"""Stream sweep (the torchvision-8587 / -9606 class): kornia's public functions and augmentations
used from two streams on the simulated device, as a data pipeline and a model on their own
streams use them (`fixtures/proxies/stream_proxy.py`). Findings: `stream-race`; a call the
simulation cannot run is inconclusive. One test per kornia module (each callable its own row in
results.json): on the simulated device a test's own cost outweighs one call.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.proxies.stream_proxy import on_two_streams
from simcuda import Simulation
from suites.kornia_sweeps.targets import MOVED
from suites.kornia_sweeps.test_device_sweep import SIMULATED_CALLS, SIMULATED_DEVICE, SIMULATED_MODULES

CALLS = {
    name: next(call for call in calls if call.way == MOVED) for name, calls in SIMULATED_CALLS.items() if any(call.way == MOVED for call in calls)
}
GROUPS = {module.strip("."): names for module in SIMULATED_MODULES if (names := [name for name in CALLS if name.startswith(module)])}


@pytest.mark.simulable
@pytest.mark.devices(SIMULATED_DEVICE)
@pytest.mark.parametrize("module", list(GROUPS))
def test_callables_from_two_streams(device: str, simulation: Simulation, module: str, sweep_record_callables) -> None:
    results = {name: on_two_streams(CALLS[name].call, torch.device(device), simulation.streams, "kornia") for name in GROUPS[module]}
    sweep_record_callables("stream", SIMULATED_DEVICE, results)
