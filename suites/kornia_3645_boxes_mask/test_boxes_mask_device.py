"""kornia-3645, direct: Boxes.to_mask on `device` must give the CPU's mask.

kornia 0.8.2 added a vectorized path for CUDA boxes (PR #3262) beside the CPU's loop, and its
comparisons kept the box's far edges (`< x2 + 1`, `< y2 + 1`) where the loop's slices stop before
them: on a CUDA device every mask is a row and a column larger than the CPU's. On cpu the body is
a control; on simcuda:N the boxes take the CUDA path, as on a GPU (simulated evidence); on a real
GPU (argued, not run here) the same branch runs.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from suites.device_oracle import check_matches_cpu

Boxes = library_api("kornia.geometry.boxes", "Boxes", first_release="0.6.10")

# A mask is ones and zeros: a correct device gives the CPU's values exactly.
ATOL = 0.0
CASES = [
    pytest.param([[1.0, 1.0, 3.0, 2.0]], (5, 6), id="one-box"),
    pytest.param([[0.0, 0.0, 2.0, 4.0], [2.0, 1.0, 5.0, 3.0]], (6, 7), id="two-boxes"),
]


@pytest.mark.known_bug("kornia-3645", evidence="direct")
@pytest.mark.parametrize(("xyxy", "size"), CASES)
def test_boxes_mask_on_device_matches_cpu(device: str, simulation: object | None, xyxy: list[list[float]], size: tuple[int, int]) -> None:
    target = torch.device(device)
    boxes = torch.tensor(xyxy)
    height, width = size
    expected = Boxes.from_tensor(boxes, mode="xyxy").to_mask(height, width)
    check_matches_cpu(
        lambda: Boxes.from_tensor(boxes.to(target), mode="xyxy").to_mask(height, width), target, simulation, "Boxes.to_mask", expected, ATOL
    )
