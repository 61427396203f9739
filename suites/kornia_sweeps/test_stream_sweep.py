"""Stream sweep (the torchvision-8587 / -9606 class): kornia's public functions and augmentations
used from two streams on the simulated device, as a data pipeline and a model on their own
streams use them (`fixtures/proxies/stream_proxy.py`). Findings: `stream-race`; a call the
simulation cannot run is inconclusive.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.proxies.stream_proxy import on_two_streams
from simcuda.simulation import Simulation
from suites.kornia_sweeps.targets import MOVED
from suites.kornia_sweeps.test_device_sweep import SIMULATED_CALLS, SIMULATED_DEVICE

CALLS = {name: next(call for call in calls if call.way == MOVED) for name, calls in SIMULATED_CALLS.items() if any(call.way == MOVED for call in calls)}


@pytest.mark.simulable
@pytest.mark.devices(SIMULATED_DEVICE)
@pytest.mark.parametrize("name", list(CALLS))
def test_callable_from_two_streams(device: str, simulation: Simulation, name: str, sweep_record) -> None:
    sweep_record("stream", name, SIMULATED_DEVICE, on_two_streams(CALLS[name].call, torch.device(device), simulation.streams))
