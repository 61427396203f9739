"""The sam2 stream sweep's finding (suites/sam2_sweeps/, triaged in the sweeps' allow-list) is
exactly the missing synchronize: with a synchronize after `_run_single_frame_inference` (where
sam2 copies the offloaded masks with `non_blocking=True`) the offloaded way is clean, and without
it the race names sam2's copy and its host read. Needs sam2 (the optional extra)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fixtures.proxies.meta_proxy import CLEAN, FINDING
from fixtures.proxies.stream_proxy import on_two_streams
from simcuda import simulated_cuda

predictor_module = pytest.importorskip(
    "sam2.sam2_video_predictor", reason="sam2 is not installed (the optional extra): SAM2_BUILD_CUDA=0 pip install -e '.[sam2]'"
)
from suites.sam2_sweeps.targets import predictor_call, write_frames  # noqa: E402 - after the sam2 skip above

OFFLOADED = "state offloaded to the CPU"


def sweep(frames: Path) -> object:
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        return on_two_streams(predictor_call(OFFLOADED, frames), torch.device("cuda:1"), simulation.streams, "sam2")


def test_the_offloaded_masks_are_read_before_their_copy(tmp_path: Path) -> None:
    result = sweep(write_frames(tmp_path))
    assert result.kind == FINDING, result.detail
    assert "sam2_video_predictor.py" in result.detail and "aten::_to_copy" in result.detail and "on the host" in result.detail


def test_a_synchronize_after_the_copy_clears_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = predictor_module.SAM2VideoPredictor._run_single_frame_inference

    def synchronized(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        torch.cuda.synchronize()
        return out

    monkeypatch.setattr(predictor_module.SAM2VideoPredictor, "_run_single_frame_inference", synchronized)
    result = sweep(write_frames(tmp_path))
    assert result.kind == CLEAN, result.detail
