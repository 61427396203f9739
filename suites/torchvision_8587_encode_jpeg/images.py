"""Source images for the round trips: uint8 CHW, built on the device under test.

They are built with device kernels right before the encode on purpose: the upstream bug is the
encoder not waiting for work queued on the caller's stream, and a synchronize between building
and encoding would hide it. Every frame draws its own colours from `rng`, so two consecutive
frames of one size differ (a stale frame cannot pass for a fresh one).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

# Frame sides drawn per iteration. On a GPU upstream's 64-2048 (bigger frames widen the race
# window); on CPU, where the run is a control of the oracle, frames stay small and cheap.
SIZE_RANGE = {"cuda": (64, 2048), "cpu": (64, 768)}
ImageMaker = Callable[[int, int, torch.Generator, torch.device], torch.Tensor]
TILE = 16  # side of the repeated noise tile of textured images


def gradient_image(height: int, width: int, rng: torch.Generator, device: torch.device) -> torch.Tensor:
    """A smooth diagonal gradient between two random colours (the upstream reproducer's image)."""
    low = torch.randint(0, 64, (3, 1, 1), generator=rng).float().to(device)
    high = torch.randint(192, 256, (3, 1, 1), generator=rng).float().to(device)
    rows = torch.linspace(0, 1, height, device=device).view(1, height, 1)
    cols = torch.linspace(0, 1, width, device=device).view(1, 1, width)
    return (low + (high - low) * (rows + cols) / 2).round().to(torch.uint8)


def textured_image(height: int, width: int, rng: torch.Generator, device: torch.device) -> torch.Tensor:
    """A gradient under oblique stripes and a repeated noise tile: edges and fine detail that a
    corrupt or misplaced block shows plainly. Texture is the same in all channels (luma), since
    the encoder's 4:2:0 chroma subsampling blurs colour detail even when it works correctly."""
    base = gradient_image(height, width, rng, device).float()
    angle = float(torch.rand((), generator=rng)) * math.pi
    period = 6.0 + 20.0 * float(torch.rand((), generator=rng))
    rows = torch.arange(height, device=device).view(1, height, 1).float()
    cols = torch.arange(width, device=device).view(1, 1, width).float()
    stripes = 30.0 * torch.sin(2 * math.pi * (cols * math.cos(angle) + rows * math.sin(angle)) / period)
    tile = (8.0 * torch.randn(1, TILE, TILE, generator=rng)).to(device)
    noise = tile.repeat(1, math.ceil(height / TILE), math.ceil(width / TILE))[:, :height, :width]
    return (0.7 * base + 40.0 + stripes + noise).clamp(0, 255).round().to(torch.uint8)


IMAGE_MAKERS: dict[str, ImageMaker] = {"gradient": gradient_image, "textured": textured_image}


def image_maker(index: int) -> ImageMaker:
    """The maker of the index-th frame: gradient, textured, gradient, ... so a stale frame is never
    of the same kind as the one it stands in for."""
    makers = list(IMAGE_MAKERS.values())
    return makers[index % len(makers)]


def random_size(rng: torch.Generator, low: int, high: int) -> tuple[int, int]:
    """(height, width), each uniform in [low, high]: non-square, odd sides included."""
    height, width = torch.randint(low, high + 1, (2,), generator=rng).tolist()
    return height, width


def with_layout(image: torch.Tensor, layout: str) -> torch.Tensor:
    """The same pixels, stored contiguously or as a channels-last (non-contiguous CHW) view."""
    if layout == "contiguous":
        return image.contiguous()
    if layout == "channels_last":
        return image.permute(1, 2, 0).contiguous().permute(2, 0, 1)
    raise ValueError(f"unknown layout {layout!r}")


LAYOUTS = ("contiguous", "channels_last")


def cpu_frames(rng: torch.Generator, count: int, decoder: torch.device) -> list[torch.Tensor]:
    """Frames built on CPU (for the CPU encoder), sized for the device that will decode them."""
    sizes = [random_size(rng, *SIZE_RANGE[decoder.type]) for _ in range(count)]
    return [image_maker(index)(*size, rng, torch.device("cpu")) for index, size in enumerate(sizes)]
