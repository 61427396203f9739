"""Stream sweep (the torchvision-8587 / -9606 class): kornia's public functions and augmentations
used from two streams on the simulated device, as a data pipeline and a model on their own
streams use them.

Each callable runs once on a side stream A and, if that left device memory alive (a cache, state),
then on a side stream B; each stream waits for the default stream first (where nothing of the call
is), and neither waits for the other, as two independent users of a library do. A correct library shares no memory between the two calls
without ordering it: a per-device cache filled on A and read on B without waiting for A, a block
freed on A and reused on B, are races (simcuda/streams.py names both accesses). Findings:
`stream-race`; a call the simulation cannot run is inconclusive.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.proxies.meta_proxy import CLEAN, ERROR, FINDING, INCONCLUSIVE, ProxyResult, classify_call
from simcuda import SimulationUnsupported, StreamRace
from simcuda.simulation import Simulation
from simcuda.streams import StreamTable
from suites.kornia_sweeps.test_device_sweep import SIMULATED_CALLS, SIMULATED_DEVICE
from suites.kornia_sweeps.targets import MOVED

STREAM_RACE = "stream-race"
CALLS = {name: next(call for call in calls if call.way == MOVED) for name, calls in SIMULATED_CALLS.items() if any(call.way == MOVED for call in calls)}


def on_two_streams(call, device: torch.device, streams: StreamTable) -> ProxyResult:  # noqa: ANN001 - a SweepCall
    """The call from stream A, then, when A left device memory alive (a cache, module state), from
    stream B; each stream ordered after the default stream only."""
    default = torch.cuda.current_stream()
    try:
        before = streams.live_blocks()
        for _ in range(2):
            side = torch.cuda.Stream()
            side.wait_stream(default)
            with torch.cuda.stream(side):
                kind, detail = _run(call, device)
            if kind == ERROR:  # the device sweep judges failures on the device; this one, ordering
                return ProxyResult(INCONCLUSIVE, f"no run to judge its ordering: {detail}")
            if not streams.live_blocks() - before:  # nothing of the first call is left to share
                break
    except SimulationUnsupported as error:
        return ProxyResult(INCONCLUSIVE, f"the simulated device cannot run this: {error}")
    except StreamRace as race:
        return ProxyResult(FINDING, str(race), found=STREAM_RACE)
    return ProxyResult(CLEAN)


def _run(call, device: torch.device) -> tuple[str, str]:  # noqa: ANN001 - a SweepCall
    """The call's classification, its outputs already dropped (what outlives them is shared)."""
    result = classify_call(lambda: call.call(device), device)
    return result.kind, result.detail


@pytest.mark.simulable
@pytest.mark.devices(SIMULATED_DEVICE)
@pytest.mark.parametrize("name", list(CALLS))
def test_callable_from_two_streams(device: str, simulation: Simulation, name: str, sweep_record) -> None:
    sweep_record("stream", name, SIMULATED_DEVICE, on_two_streams(CALLS[name], torch.device(device), simulation.streams))
