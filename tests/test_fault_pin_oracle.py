"""The torchvision-8855 oracle fails on a faked pin that strips the subclass or loses metadata,
and on torchvision's own wrapper with the fix taken out; the CPU pinning stand-in is gone after
use."""

from __future__ import annotations

import pytest
import torch
from torchvision import tv_tensors

from fixtures.known_bugs.outcomes import BugObserved
from suites.torchvision_8855_pin_memory.cpu_pinning import cpu_pinning
from suites.torchvision_8855_pin_memory.oracle import check_kept
from suites.torchvision_8855_pin_memory.samples import SAMPLES


def stripping_pin(tensor: torch.Tensor) -> torch.Tensor:
    """A faked pin that returns a plain tensor, as torchvision 0.16-0.21 did."""
    return tensor.as_subclass(torch.Tensor).clone()


def forgetful_pin(tensor: tv_tensors.BoundingBoxes) -> tv_tensors.BoundingBoxes:
    """A faked pin that keeps the type but rebuilds it with a transposed canvas."""
    height, width = tensor.canvas_size
    return tv_tensors.BoundingBoxes(tensor.as_subclass(torch.Tensor).clone(), format=tensor.format, canvas_size=(width, height))


@pytest.mark.catches("suites/torchvision_8855_pin_memory/oracle.py::check_kept")
@pytest.mark.parametrize("kind", SAMPLES)
def test_fault_stripped_subclass(kind):
    original = SAMPLES[kind]()
    with pytest.raises(BugObserved, match="subclass lost"):
        check_kept(original, stripping_pin(original), "faked pin")


def formatless_pin(tensor: tv_tensors.BoundingBoxes) -> tv_tensors.BoundingBoxes:
    """A faked pin that keeps the type and canvas_size but drops `format` (a bare as_subclass,
    then only canvas_size copied back)."""
    pinned = tensor.as_subclass(torch.Tensor).clone().as_subclass(tv_tensors.BoundingBoxes)
    pinned.canvas_size = tensor.canvas_size
    return pinned


@pytest.mark.catches("suites/torchvision_8855_pin_memory/oracle.py::check_kept")
@pytest.mark.parametrize("pin", [forgetful_pin, formatless_pin], ids=["transposed-canvas_size", "dropped-format"])
def test_fault_lost_metadata(pin):
    original = SAMPLES["BoundingBoxes"]()
    with pytest.raises(BugObserved, match="changed its metadata") as finding:
        check_kept(original, pin(original), "faked pin")
    assert "format" in str(finding.value)


@pytest.mark.catches("suites/torchvision_8855_pin_memory/oracle.py::check_kept")
def test_fault_wrapper_without_the_fix(monkeypatch):
    """torchvision's real wrapper with Tensor.pin_memory taken out of the re-wrapped operations
    (the state before PR 8921): the CPU proxy sees the bug."""
    import torchvision.tv_tensors._tv_tensor as tv_tensor_module

    without_fix = tv_tensor_module._FORCE_TORCHFUNCTION_SUBCLASS - {torch.Tensor.pin_memory}
    monkeypatch.setattr(tv_tensor_module, "_FORCE_TORCHFUNCTION_SUBCLASS", without_fix)
    original = SAMPLES["BoundingBoxes"]()
    with cpu_pinning(), pytest.raises(BugObserved, match="subclass lost"):
        check_kept(original, original.pin_memory(), "pin_memory() without the fix")


def pin_behaviour() -> str:
    """What pin_memory() / is_pinned() of a CPU tensor do right now, as text."""
    try:
        outcome = f"returned {type(torch.empty(2).pin_memory()).__name__}"
    except RuntimeError as error:
        outcome = f"raised {type(error).__name__}: {error}"
    return f"{outcome}; is_pinned={torch.empty(2).is_pinned()}"


def test_cpu_pinning_is_removed_after_use():
    before = pin_behaviour()
    with cpu_pinning():
        assert pin_behaviour() == "returned Tensor; is_pinned=True"
    assert pin_behaviour() == before


def test_cpu_pinning_is_removed_when_the_test_fails():
    before = pin_behaviour()
    with pytest.raises(ZeroDivisionError), cpu_pinning():
        1 / 0
    assert pin_behaviour() == before
