"""Work that keeps a device busy, so the codec runs while the caller's stream still has kernels
queued (the condition the upstream races need). On CPU the same calls run synchronously."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

# Kernel sizes: on a GPU large enough to stay queued for milliseconds; on CPU small, since
# there they only exercise the code path (nothing is queued on a CPU).
_CONV_BATCH, _CONV_CHANNELS, _CONV_SIDE = 8, 64, 256
_CPU_MATMUL_SIDE = 128
_LONG_MATMUL_SIDE = {"cuda": 4096, "cpu": 64}


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def busy_step(device: torch.device) -> torch.Tensor:
    """One unit of busy work: a convolution on a GPU (as in upstream issue 9060), a matmul on CPU."""
    if device.type == "cuda":
        images = torch.randn(_CONV_BATCH, _CONV_CHANNELS, _CONV_SIDE, _CONV_SIDE, device=device)
        weights = torch.randn(_CONV_CHANNELS, _CONV_CHANNELS, 3, 3, device=device)
        return F.conv2d(images, weights, padding=1)
    matrix = torch.randn(_CPU_MATMUL_SIDE, _CPU_MATMUL_SIDE)
    return matrix @ matrix


def keep_busy_until(done: Callable[[], bool], device: torch.device) -> int:
    """Queue busy work until `done()` says so; the number of steps (at least one)."""
    steps = 0
    while True:
        busy_step(device)
        steps += 1
        if done():
            return steps


def queue_long_work(device: torch.device) -> torch.Tensor:
    """A kernel that keeps the caller's stream busy for a while (milliseconds on a GPU)."""
    side = _LONG_MATMUL_SIDE[device.type]
    matrix = torch.randn(side, side, device=device)
    return matrix @ matrix @ matrix
