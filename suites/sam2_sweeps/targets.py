"""What the sam2 stream sweep runs: `SAM2VideoPredictor`, the sam2 code that makes `non_blocking`
copies (its offloading to the CPU: `init_state(offload_video_to_cpu=, offload_state_to_cpu=)`),
on a small random-weight model (sam2's own tiny config at 256 px: placement and ordering do not
depend on the weights) and three small frames: a click on the first, then propagation.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from fixtures.known_bugs.library_api import library_api

build_sam2_video_predictor = library_api(
    "sam2.build_sam", "build_sam2_video_predictor", first_release="0.4.1",
    hint="the optional extra: SAM2_BUILD_CUDA=0 pip install -e '.[sam2]'",
)

CONFIG = "configs/sam2.1/sam2.1_hiera_t.yaml"  # packaged with sam2 (hydra finds it by this name)
OVERRIDES = ["++model.image_size=256"]  # 16x fewer pixels than the config's 1024
FRAMES, HEIGHT, WIDTH = 3, 64, 96
# Ways of offloading, as init_state takes them: where the video frames and the tracking state live.
WAYS = {
    "state offloaded to the CPU": {"offload_video_to_cpu": False, "offload_state_to_cpu": True},
    "video offloaded to the CPU": {"offload_video_to_cpu": True, "offload_state_to_cpu": False},
    "nothing offloaded": {"offload_video_to_cpu": False, "offload_state_to_cpu": False},
}
POINTS = np.array([[30.0, 20.0]], dtype=np.float32)  # one positive click on the first frame
LABELS = np.array([1], dtype=np.int32)


def write_frames(folder: Path) -> Path:
    """Three small JPEG frames (sam2 reads a folder of them)."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(FRAMES):
        Image.fromarray(rng.integers(0, 255, (HEIGHT, WIDTH, 3), dtype=np.uint8)).save(folder / f"{index:05d}.jpg")
    return folder


def predictor_call(way: str, frames: Path) -> Callable[[torch.device], object]:
    """The predictor built on `device` (random weights), its state made the way `way` says, a click
    on the first frame (`add_new_points_or_box`), then `propagate_in_video`; returns the masks."""
    def call(device: torch.device) -> object:
        torch.manual_seed(0)
        predictor = build_sam2_video_predictor(CONFIG, ckpt_path=None, device=device, hydra_overrides_extra=OVERRIDES)
        state = predictor.init_state(video_path=str(frames), **WAYS[way])
        _, _, clicked = predictor.add_new_points_or_box(state, frame_idx=0, obj_id=1, points=POINTS, labels=LABELS)
        return [clicked, *(masks for _, _, masks in predictor.propagate_in_video(state))]

    return call
