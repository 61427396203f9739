"""kornia-3645's oracle flags kornia PR 3645 undone: inside `simulated_cuda()`, as a simcuda:1 body
runs, installed kornia's Boxes.to_mask takes 0.8.2's vectorized path for CUDA boxes, whose
comparisons keep the boxes' far edges (`< x2 + 1`). The unplanted library stays clean."""

from __future__ import annotations

import pytest
import torch
from kornia.geometry.boxes import Boxes

from fixtures.known_bugs.outcomes import BugObserved
from suites.kornia_3645_boxes_mask.test_boxes_mask_device import CASES
from suites.kornia_3645_boxes_mask.test_boxes_mask_device import test_boxes_mask_on_device_matches_cpu as suite_body
from tests.helpers.simulated_cuda1 import run_on_simulated_cuda1


def _edges_kept_on_cuda(to_mask):
    """0.8.2's CUDA path for unbatched boxes: each box's far row and column inside its mask."""

    def masked(self: Boxes, height: int, width: int) -> torch.Tensor:
        if self.device.type != "cuda":
            return to_mask(self, height, width)
        x1, y1, x2, y2 = self.to_tensor("xyxy").round().long().unbind(-1)
        ys, xs = torch.arange(height, device=self.device), torch.arange(width, device=self.device)
        rows = (ys[None, :] >= y1[:, None]) & (ys[None, :] < y2[:, None] + 1)
        columns = (xs[None, :] >= x1[:, None]) & (xs[None, :] < x2[:, None] + 1)
        return (rows.unsqueeze(2) & columns.unsqueeze(1)).to(self.dtype)

    return masked


@pytest.mark.catches(
    "suites/kornia_3645_boxes_mask/test_boxes_mask_device.py::test_boxes_mask_on_device_matches_cpu",
    "suites/device_oracle.py::check_matches_cpu",
)
@pytest.mark.parametrize(("xyxy", "size"), [case.values for case in CASES], ids=[case.id for case in CASES])
def test_fault_far_edges_kept_on_cuda(monkeypatch, xyxy, size) -> None:
    monkeypatch.setattr(Boxes, "to_mask", _edges_kept_on_cuda(Boxes.to_mask))
    with pytest.raises(BugObserved, match=r"Boxes.to_mask on cuda:1 differs from CPU: max_abs \|difference\| 1 > 0.0"):
        run_on_simulated_cuda1(suite_body, xyxy, size)


@pytest.mark.parametrize(("xyxy", "size"), [case.values for case in CASES], ids=[case.id for case in CASES])
def test_the_installed_kornia_masking_as_the_cpu_does_is_clean(xyxy, size) -> None:
    run_on_simulated_cuda1(suite_body, xyxy, size)
