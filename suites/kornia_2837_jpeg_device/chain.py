"""The kornia-2837 call chain's pieces, each as a call on inputs made on a given device."""

from __future__ import annotations

from collections.abc import Callable

import torch

from fixtures.known_bugs.library_api import library_api

gaussian, gaussian_blur2d, get_gaussian_kernel1d = library_api(
    "kornia.filters", "gaussian", "gaussian_blur2d", "get_gaussian_kernel1d", first_release="0.2.0"
)
rescale, resize = library_api("kornia.geometry.transform", "rescale", "resize", first_release="0.4.1")

ChainCall = Callable[[torch.device], torch.Tensor]


def _image(device: torch.device) -> torch.Tensor:
    return torch.rand(2, 3, 16, 16).to(device)


# Sigma as a tensor on the device is what the codec's resize passes down; `gaussian` with such a
# sigma is exactly where the buggy commit built its `mean` on the CPU.
CHAIN_PIECES: dict[str, ChainCall] = {
    "gaussian": lambda d: gaussian(5, torch.tensor([[1.0]], device=d)),
    "get_gaussian_kernel1d": lambda d: get_gaussian_kernel1d(5, torch.tensor([[1.0]], device=d)),
    "gaussian_blur2d": lambda d: gaussian_blur2d(_image(d), (5, 5), (1.5, 1.5)),
    "rescale_antialias": lambda d: rescale(_image(d), 0.5, antialias=True),
    "resize_antialias": lambda d: resize(_image(d), (8, 8), antialias=True),
}
