"""Calibrate the torchvision-8587 oracle: the worst 8x8-block and whole-frame differences of
correct CPU encodes (what the thresholds must stay above), and what partial stale frames score.

    python bench/jpeg_block_calibration.py [--frames 100] [--max-side 2048]

Frames are the suite's own (gradient and textured, contiguous and channels-last, random sides
from 64), encoded at the suite's quality and decoded with torchvision on CPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torchvision.io import decode_jpeg, encode_jpeg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from suites.torchvision_8587_encode_jpeg.images import IMAGE_MAKERS, LAYOUTS, random_size, with_layout  # noqa: E402
from suites.torchvision_8587_encode_jpeg.oracle import (  # noqa: E402
    MAX_BLOCK_ABS_DIFF,
    QUALITY,
    block_abs_diff_255,
    mean_abs_diff_255,
)

CPU = torch.device("cpu")
STALE_FRACTIONS = (0.05, 0.10, 0.20)
STALE_SIZES = ((64, 64), (96, 131), (256, 256), (768, 512))


def round_trip(image: torch.Tensor) -> torch.Tensor:
    return decode_jpeg(encode_jpeg(image, quality=QUALITY))


def correct_encodes(frames: int, max_side: int, rng: torch.Generator) -> tuple[float, float]:
    """(worst block, worst whole-frame mean) over `frames` frames of every content and layout."""
    worst_block = worst_mean = 0.0
    for index in range(frames):
        height, width = random_size(rng, 64, max_side)
        for make in IMAGE_MAKERS.values():
            source = with_layout(make(height, width, rng, CPU), LAYOUTS[index % len(LAYOUTS)])
            decoded = round_trip(source)
            worst_block = max(worst_block, block_abs_diff_255(source, decoded).max().item())
            worst_mean = max(worst_mean, mean_abs_diff_255(source, decoded))
    return worst_block, worst_mean


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--max-side", type=int, default=2048)
    options = parser.parse_args()
    rng = torch.Generator().manual_seed(0)
    worst_block, worst_mean = correct_encodes(options.frames, options.max_side, rng)
    print(f"correct encodes ({options.frames} sizes x {len(IMAGE_MAKERS)} contents, sides 64-{options.max_side}):")
    print(f"  worst 8x8 block {worst_block:.2f} (threshold {MAX_BLOCK_ABS_DIFF}, {MAX_BLOCK_ABS_DIFF / worst_block:.1f}x)")
    print(f"  worst mean      {worst_mean:.2f} (reported beside a finding; the block threshold bounds it)")
    print("bottom rows stale (from the frame before):  size  fraction  rows  worst block  mean")
    for height, width in STALE_SIZES:
        previous, current = (IMAGE_MAKERS["gradient"](height, width, rng, CPU) for _ in range(2))
        for fraction in STALE_FRACTIONS:
            rows = max(1, round(height * fraction))
            partial = current.clone()
            partial[:, height - rows :] = previous[:, height - rows :]
            decoded = round_trip(partial)
            block, mean = block_abs_diff_255(current, decoded).max().item(), mean_abs_diff_255(current, decoded)
            print(f"  {height}x{width}  {fraction:.0%}  {rows}  {block:.2f}  {mean:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
