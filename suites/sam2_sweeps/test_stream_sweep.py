"""Stream sweep over sam2 (the torchvision-8587 class: a result read before its copy is done):
`SAM2VideoPredictor` (a click, then propagation) with its state or video offloaded to the CPU,
where sam2 copies with `non_blocking=True`, on the simulated device from two streams
(`fixtures/proxies/stream_proxy.py`). Findings: `stream-race`, naming both accesses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fixtures.proxies.stream_proxy import SIMULATED_DEVICE, on_two_streams
from simcuda import Simulation
from suites.sam2_sweeps.targets import WAYS, predictor_call, write_frames


@pytest.fixture(scope="module")
def frames(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_frames(tmp_path_factory.mktemp("sam2_frames"))


@pytest.mark.simulable
@pytest.mark.devices(SIMULATED_DEVICE)
def test_video_predictor_from_two_streams(device: str, simulation: Simulation, frames: Path, sweep_record) -> None:
    results = {way: on_two_streams(predictor_call(way, frames), torch.device(device), simulation.streams, "sam2") for way in WAYS}
    sweep_record("stream", "sam2.sam2_video_predictor.SAM2VideoPredictor", SIMULATED_DEVICE, results)
