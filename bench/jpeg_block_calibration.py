"""Calibrate the torchvision-8587 oracle: the worst 8x8-block and whole-frame differences of
correct CPU encodes (what the thresholds must stay above), and what partial stale frames score.

    python bench/jpeg_block_calibration.py [--frames 100] [--max-side 2048] [--chroma nearest]

Frames are the suite's own (gradient and textured, contiguous and channels-last, random sides
from 64), encoded at the suite's quality and decoded with torchvision on CPU (libjpeg, whose
"fancy" chroma upsampling interpolates the 4:2:0 chroma). `--chroma nearest` re-expresses each
decoded frame as a decoder that replicates every chroma sample over its 2x2 pixels would give it
(nvJPEG's GPU decode, which the GPU decode tests use, does not interpolate): its chroma planes
averaged over 2x2 blocks and replicated, an estimate of that decoder's output made on the CPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torchvision.io import decode_jpeg, encode_jpeg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from suites.oracle_thresholds import recorded_thresholds
from suites.torchvision_8587_encode_jpeg.images import IMAGE_MAKERS, LAYOUTS, random_size, with_layout
from suites.torchvision_8587_encode_jpeg.oracle import QUALITY, block_abs_diff_255, mean_abs_diff_255

# As calibrated (suites/oracle_thresholds.toml), which the oracle's constant must equal.
MAX_BLOCK_ABS_DIFF = recorded_thresholds()["suites.torchvision_8587_encode_jpeg.oracle:MAX_BLOCK_ABS_DIFF"]
CPU = torch.device("cpu")
STALE_FRACTIONS = (0.05, 0.10, 0.20)
STALE_SIZES = ((64, 64), (96, 131), (256, 256), (768, 512))


# JFIF's RGB <-> YCbCr (ITU-R BT.601, full range), on 0-255 floats.
TO_YCBCR = torch.tensor([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]])
TO_RGB = torch.linalg.inv(TO_YCBCR)
CHROMA_OFFSET = torch.tensor([0.0, 128.0, 128.0]).view(3, 1, 1)


def replicated_chroma(decoded: torch.Tensor) -> torch.Tensor:
    """`decoded` (3xHxW uint8) with each 2x2 block's chroma averaged and replicated over it."""
    ycbcr = torch.einsum("ij,jhw->ihw", TO_YCBCR, decoded.float()) + CHROMA_OFFSET
    height, width = ycbcr.shape[1:]
    chroma = torch.nn.functional.avg_pool2d(ycbcr[1:].unsqueeze(0), 2, ceil_mode=True)
    ycbcr[1:] = chroma.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)[0, :, :height, :width]
    rgb = torch.einsum("ij,jhw->ihw", TO_RGB, ycbcr - CHROMA_OFFSET)
    return rgb.round().clamp(0, 255).to(torch.uint8)


UPSAMPLING = {"fancy": lambda decoded: decoded, "nearest": replicated_chroma}


def round_trip(image: torch.Tensor, chroma: str = "fancy") -> torch.Tensor:
    return UPSAMPLING[chroma](decode_jpeg(encode_jpeg(image, quality=QUALITY)).contiguous())


def correct_encodes(frames: int, max_side: int, rng: torch.Generator, chroma: str = "fancy") -> tuple[float, float]:
    """(worst block, worst whole-frame mean) over `frames` frames of every content and layout."""
    worst_block = worst_mean = 0.0
    for index in range(frames):
        height, width = random_size(rng, 64, max_side)
        for make in IMAGE_MAKERS.values():
            source = with_layout(make(height, width, rng, CPU), LAYOUTS[index % len(LAYOUTS)])
            decoded = round_trip(source, chroma)
            worst_block = max(worst_block, block_abs_diff_255(source, decoded).max().item())
            worst_mean = max(worst_mean, mean_abs_diff_255(source, decoded))
    return worst_block, worst_mean


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--max-side", type=int, default=2048)
    parser.add_argument("--chroma", choices=sorted(UPSAMPLING), default="fancy", help="the decoder's chroma upsampling (see above)")
    options = parser.parse_args()
    if options.frames < 1 or options.max_side < 64:
        parser.error(f"--frames {options.frames} --max-side {options.max_side}: at least one frame, sides from 64 up")
    rng = torch.Generator().manual_seed(0)
    worst_block, worst_mean = correct_encodes(options.frames, options.max_side, rng, options.chroma)
    print(f"correct encodes ({options.frames} sizes x {len(IMAGE_MAKERS)} contents, sides 64-{options.max_side}, {options.chroma} chroma):")
    print(f"  worst 8x8 block {worst_block:.2f} (threshold {MAX_BLOCK_ABS_DIFF}, {MAX_BLOCK_ABS_DIFF / worst_block:.1f}x)")
    print(f"  worst mean      {worst_mean:.2f} (reported beside a finding; the block threshold bounds it)")
    print("bottom rows stale (from the frame before):  size  fraction  rows  worst block  mean")
    for height, width in STALE_SIZES:
        previous, current = (IMAGE_MAKERS["gradient"](height, width, rng, CPU) for _ in range(2))
        for fraction in STALE_FRACTIONS:
            rows = max(1, round(height * fraction))
            partial = current.clone()
            partial[:, height - rows :] = previous[:, height - rows :]
            decoded = round_trip(partial, options.chroma)
            block, mean = block_abs_diff_255(current, decoded).max().item(), mean_abs_diff_255(current, decoded)
            print(f"  {height}x{width}  {fraction:.0%}  {rows}  {block:.2f}  {mean:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
