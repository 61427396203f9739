"""Stream sweep (the torchvision-8587 / -9606 class) over torchvision: every public transform of
`torchvision.transforms.v2` on TV tensors that arrive pinned and `non_blocking` and leave the
same way, used from two streams on the simulated device (`fixtures/proxies/stream_proxy.py`); one
test per v2 module (its rows per transform in results.json).
Findings: `stream-race` (a race, naming both accesses) or `wrong-device-output`; a call the
simulation cannot run, or that fails on the device, is inconclusive, once the same call has run on
the CPU (failing there too, the sweep's own arguments are wrong: the test errors).
"""

from __future__ import annotations

import pytest
import torch

from fixtures.proxies.meta_proxy import INCONCLUSIVE
from fixtures.proxies.stream_proxy import NO_RUN, SIMULATED_DEVICE, on_two_streams
from fixtures.sweeps.tables import skip_if_older_than_table
from simcuda import Simulation
from suites.torchvision_sweeps.targets import TABLE_WRITTEN_FOR, swept_groups, torchvision, transform_call

GROUPS = swept_groups()


@pytest.mark.simulable
@pytest.mark.devices(SIMULATED_DEVICE)
@pytest.mark.parametrize("group", list(GROUPS))
def test_transforms_from_two_streams(device: str, simulation: Simulation, group: str, sweep_record_callables) -> None:
    results = {}
    for name in GROUPS[group]:
        result = on_two_streams(transform_call(name), torch.device(device), simulation.streams, "torchvision")
        if result.kind == INCONCLUSIVE and result.detail.startswith(NO_RUN):
            arguments_run_on_the_cpu(name)
        results[f"torchvision.transforms.v2.{name}"] = result
    sweep_record_callables("stream", SIMULATED_DEVICE, results)


def arguments_run_on_the_cpu(name: str) -> None:
    """The call failed on the device: on the CPU too means the table's arguments are wrong for this
    release, a skip that says so on a torchvision older than the table, a harness error on it or
    newer (as kornia_sweeps/targets.py's `build`)."""
    try:
        transform_call(name)(torch.device("cpu"))
    except (TypeError, ValueError) as error:
        skip_if_older_than_table("torchvision", torchvision.__version__, TABLE_WRITTEN_FOR, f"{name}: {error}")
        raise
