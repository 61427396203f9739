"""Stream sweep (the torchvision-8587 / -9606 class): kornia's public functions and augmentations
used from two streams on the simulated device, as a data pipeline and a model on their own
streams use them (`fixtures/proxies/stream_proxy.py`). Findings: `stream-race`; a call the
simulation cannot run is inconclusive, and so is one whose own signature, on a release older than
the arguments table, refuses them: the module's other callables still run. One test per kornia
module (each callable its own row in results.json): on the simulated device a test's own cost
outweighs one call.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.proxies.meta_proxy import INCONCLUSIVE, ProxyResult
from fixtures.proxies.stream_proxy import on_two_streams
from simcuda import Simulation
from suites.kornia_sweeps.targets import MOVED
from suites.kornia_sweeps.test_device_sweep import SIMULATED_CALLS, SIMULATED_DEVICE

# An augmentation moved to the device, as a pipeline's module lives there; a function (no way) as it is called.
STREAM_WAYS = (MOVED, "")
CALLS = {name: call for name, calls in SIMULATED_CALLS.items() for call in calls if call.way in STREAM_WAYS}
GROUPS: dict[str, list[str]] = {}  # kornia module -> its callables
for _name in CALLS:
    GROUPS.setdefault(_name.rpartition(".")[0], []).append(_name)


def stream_result(name: str, device: torch.device, simulation: Simulation) -> ProxyResult:
    """One callable from two streams; inconclusive where the release is older than the arguments
    table and the callable refuses them (the table's skip, its text kept)."""
    try:
        return on_two_streams(CALLS[name].call, device, simulation.streams, "kornia")
    except pytest.skip.Exception as older:
        return ProxyResult(INCONCLUSIVE, older.msg)


@pytest.mark.simulable
@pytest.mark.devices(SIMULATED_DEVICE)
@pytest.mark.parametrize("module", list(GROUPS))
def test_callables_from_two_streams(device: str, simulation: Simulation, module: str, sweep_record_callables) -> None:
    results = {name: stream_result(name, torch.device(device), simulation) for name in GROUPS[module]}
    sweep_record_callables("stream", SIMULATED_DEVICE, results)
