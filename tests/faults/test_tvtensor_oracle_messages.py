"""The torchvision-8855 oracle's findings name the operation, both types and both metadata sets,
so a report says what was lost without rerunning."""

from __future__ import annotations

import pytest
import torch
from torchvision import tv_tensors

from fixtures.known_bugs.outcomes import BugObserved
from suites.torchvision_8855_pin_memory.oracle import check_kept


def boxes(canvas_size: tuple[int, int]) -> tv_tensors.BoundingBoxes:
    return tv_tensors.BoundingBoxes(torch.zeros(1, 4), format="XYXY", canvas_size=canvas_size)


def test_a_lost_subclass_names_both_types() -> None:
    with pytest.raises(BugObserved) as raised:
        check_kept(tv_tensors.Mask(torch.zeros(2, 2)), torch.zeros(2, 2), "pin")
    assert str(raised.value) == "pin turned Mask into Tensor: subclass lost"


def test_changed_metadata_names_the_type_and_both_sets() -> None:
    original, result = boxes((4, 6)), boxes((6, 4))
    with pytest.raises(BugObserved) as raised:
        check_kept(original, result, "pin")
    assert str(raised.value) == (
        f"pin kept BoundingBoxes but changed its metadata from {vars(original)} to {vars(result)}"
    )
