"""The torchvision-8855 oracle fails on a faked pin that strips the subclass or loses metadata,
and on torchvision's own wrapper with the fix taken out, through both CPU proxies; a copy in place
of a pin is caught; the CPU pinning kernels are gone after use."""

from __future__ import annotations

import pytest
import torch
from torchvision import tv_tensors

from fixtures.known_bugs.outcomes import BugObserved
from simcuda.pinning import simulated_pinning
from suites.torchvision_8855_pin_memory import test_pin_memory_cpu_proxy as proxy
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


def without_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """torchvision's real wrapper with Tensor.pin_memory taken out of the re-wrapped operations:
    the state before PR 8921, the bug's own shape."""
    import torchvision.tv_tensors._tv_tensor as tv_tensor_module

    without_fix = tv_tensor_module._FORCE_TORCHFUNCTION_SUBCLASS - {torch.Tensor.pin_memory}
    monkeypatch.setattr(tv_tensor_module, "_FORCE_TORCHFUNCTION_SUBCLASS", without_fix)


@pytest.mark.catches("suites/torchvision_8855_pin_memory/oracle.py::check_kept")
def test_fault_wrapper_without_the_fix(monkeypatch):
    without_the_fix(monkeypatch)
    original = SAMPLES["BoundingBoxes"]()
    with simulated_pinning(), pytest.raises(BugObserved, match="subclass lost"):
        check_kept(original, original.pin_memory(), "pin_memory() without the fix")


@pytest.mark.catches(
    "suites/torchvision_8855_pin_memory/test_pin_memory_cpu_proxy.py::test_pin_memory_keeps_tv_tensor_cpu_proxy",
    "suites/torchvision_8855_pin_memory/test_pin_memory_cpu_proxy.py::test_dataloader_pin_helper_keeps_tv_tensors_cpu_proxy",
)
def test_fault_without_the_fix_reaches_both_cpu_proxies(monkeypatch):
    """The symptom in what each proxy compares (the pinned tensor, the pinned batch): a proxy that
    compared a result with itself would pass it."""
    without_the_fix(monkeypatch)
    with simulated_pinning():
        with pytest.raises(BugObserved, match="subclass lost"):
            proxy.test_pin_memory_keeps_tv_tensor_cpu_proxy(None, "BoundingBoxes")
        with pytest.raises(BugObserved, match="subclass lost"):
            proxy.test_dataloader_pin_helper_keeps_tv_tensors_cpu_proxy(None, "dict_of_lists")


@pytest.mark.catches("suites/torchvision_8855_pin_memory/test_pin_memory_cpu_proxy.py::test_dataloader_pin_helper_keeps_tv_tensors_cpu_proxy")
def test_fault_a_helper_that_copies_instead_of_pinning_is_a_harness_error(monkeypatch):
    """A clone in place of the pin keeps every subclass: only `is_pinned` tells it apart."""
    monkeypatch.setattr(
        proxy,
        "pin_batch",
        lambda batch: torch.utils._pytree.tree_map(lambda leaf: leaf.clone() if isinstance(leaf, torch.Tensor) else leaf, batch),
    )
    with simulated_pinning(), pytest.raises(AssertionError, match="unpinned"):
        proxy.test_dataloader_pin_helper_keeps_tv_tensors_cpu_proxy(None, "dict_of_lists")


def pin_behaviour() -> str:
    """What pin_memory() / is_pinned() of a CPU tensor do right now, as text."""
    fresh = torch.empty(2)
    try:
        outcome = f"returned {type(fresh.pin_memory()).__name__}, is_pinned={fresh.pin_memory().is_pinned()}"
    except RuntimeError as error:
        outcome = f"raised {type(error).__name__}"
    return f"{outcome}; a fresh tensor is_pinned={fresh.is_pinned()}"


def test_cpu_pinning_is_removed_after_use():
    before = pin_behaviour()
    with simulated_pinning():
        assert pin_behaviour() == "returned Tensor, is_pinned=True; a fresh tensor is_pinned=False"
    assert pin_behaviour() == before


def test_cpu_pinning_is_removed_when_the_test_fails():
    before = pin_behaviour()
    with pytest.raises(ZeroDivisionError), simulated_pinning():
        raise ZeroDivisionError("the test failed")
    assert pin_behaviour() == before
