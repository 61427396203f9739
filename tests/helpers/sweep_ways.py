"""An augmentation swept as the simulated device sweep sweeps it, outside a pytest session: each
way's CPU run first (no simulation), then its run on simcuda:1's "cuda:1" against it, each from one
seed (the simulated devices draw from the CPU's generator). The sweep's fault tests use it."""

from __future__ import annotations

import torch

from fixtures.proxies.meta_proxy import ProxyResult, classify_call
from simcuda import simulated_cuda
from suites.kornia_sweeps.targets import augmentation_call
from suites.kornia_sweeps.test_device_sweep import way_result

DEVICE = torch.device("cuda:1")


def swept(cls: type, ways: tuple[str, ...]) -> dict[str, ProxyResult]:
    """{way: the row the sweep records}."""
    calls = [augmentation_call(cls, way) for way in ways]
    references = {}
    for call in calls:
        torch.manual_seed(0)
        references[call.way] = classify_call(lambda call=call: call.call(torch.device("cpu")), "cpu")
    with simulated_cuda(device_count=2, shared_generator=True) as simulation:
        rows = {}
        for call in calls:
            torch.manual_seed(0)
            rows[call.way] = way_result(call, DEVICE, simulation, references[call.way])
    return rows
