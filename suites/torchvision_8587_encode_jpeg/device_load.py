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
# What upstream's reproducers hold the caller's stream with (pytorch/vision PR 9606: 199 of 200
# decodes wrote into freed memory on an H100; torchcodec PR 1634's regression test): a kernel
# that spins for 200 million cycles, ~100 ms at a GPU's ~2 GHz. Every kernel queued behind it
# runs long after the decoder could have written.
_STALL_CYCLES = 200_000_000


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


def queue_long_work(device: torch.device) -> None:
    """Keep the caller's stream busy for ~100 ms on a GPU (torch's spin kernel, which its own
    stream tests use); on CPU, where nothing is queued, a small matmul runs the path."""
    if device.type == "cuda":
        torch.cuda._sleep(_STALL_CYCLES)
        return
    matrix = torch.randn(_CPU_MATMUL_SIDE, _CPU_MATMUL_SIDE)
    matrix @ matrix
