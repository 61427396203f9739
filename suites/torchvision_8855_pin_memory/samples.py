"""One small sample of every TVTensor type the installed torchvision has, built fresh per call."""

from __future__ import annotations

from collections.abc import Callable

import torch

from fixtures.known_bugs.library_api import library_api

tv_tensors = library_api("torchvision.tv_tensors", first_release="0.16.0")

CANVAS = (24, 32)  # (height, width); deliberately not square, so a swapped canvas_size shows


def _boxes() -> tv_tensors.BoundingBoxes:
    return tv_tensors.BoundingBoxes([[1.0, 2.0, 10.0, 12.0], [0.0, 0.0, 5.0, 5.0]], format="XYWH", canvas_size=CANVAS)


SAMPLES: dict[str, Callable[[], torch.Tensor]] = {
    # Floating point throughout, so every type takes the same rows of the contract.
    "Image": lambda: tv_tensors.Image(torch.rand(3, *CANVAS)),
    "Video": lambda: tv_tensors.Video(torch.rand(2, 3, *CANVAS)),
    "Mask": lambda: tv_tensors.Mask(torch.rand(*CANVAS).round()),
    "BoundingBoxes": _boxes,
}
if hasattr(tv_tensors, "KeyPoints"):  # added in torchvision 0.23
    SAMPLES["KeyPoints"] = lambda: tv_tensors.KeyPoints([[1.0, 2.0], [3.0, 4.0]], canvas_size=CANVAS)
