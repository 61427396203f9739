"""The simulated device sweep's mask ways (suites/kornia_sweeps/targets.py: an image and its mask
through AugmentationSequential, the module moved and not) reach kornia's mask paths, which the
image-only calls never take. A kornia-like augmentation whose mask transform meets a CPU tensor is
a finding of both mask ways and clean in the three image ways; the unplanted classes are clean
every way. An augmentation kornia takes no mask for gets no mask way, with the reason."""

from __future__ import annotations

import pytest
import torch
from kornia.augmentation import RandomAffine, RandomHorizontalFlip

from fixtures.proxies.meta_proxy import CLEAN, DEVICE_ERROR, FINDING, ProxyResult
from suites.kornia_sweeps.targets import (
    MOVED,
    MOVED_MASK,
    NOT_MOVED,
    NOT_MOVED_MASK,
    NOT_MOVED_MIXED,
    device_targets,
    maskless_augmentations,
)
from suites.kornia_sweeps.test_device_sweep import SIMULATED_CALLS
from tests.helpers import sweep_ways

WAYS = (MOVED, NOT_MOVED, NOT_MOVED_MIXED, MOVED_MASK, NOT_MOVED_MASK)


class MaskShiftedByACpuRow(RandomHorizontalFlip):
    """The mask's transform adds a row made on the CPU (a one-dimensional tensor, which PyTorch
    never lets meet a CUDA one), as a mask path building its own constant without the device would."""

    def apply_transform_mask(self, input, params, flags, transform=None):
        return super().apply_transform_mask(input, params, flags, transform) + torch.zeros(input.shape[-1])


def swept(cls: type) -> dict[str, ProxyResult]:
    return sweep_ways.swept(cls, WAYS)


@pytest.mark.catches("suites/kornia_sweeps/test_device_sweep.py::simulated_result")
def test_fault_a_mask_transform_meeting_a_cpu_tensor_is_found_by_the_mask_ways_only() -> None:
    rows = swept(MaskShiftedByACpuRow)
    assert [way for way in WAYS if rows[way].kind != CLEAN] == [MOVED_MASK, NOT_MOVED_MASK], rows
    for way in (MOVED_MASK, NOT_MOVED_MASK):
        assert (rows[way].kind, rows[way].found) == (FINDING, DEVICE_ERROR), rows
        assert "Expected all tensors to be on the same device" in rows[way].detail


@pytest.mark.parametrize("cls", [RandomHorizontalFlip, RandomAffine])
def test_the_unplanted_classes_are_clean_every_way(cls: type) -> None:
    rows = swept(cls)
    assert {way: row.kind for way, row in rows.items()} == dict.fromkeys(WAYS, CLEAN), rows


# kornia 0.9.0's 2D augmentations that refuse a mask on the CPU (NotImplementedError), each for the reason given.
REFUSING = {"RandomFisheye": "no apply_transform_mask", "RandomThinPlateSpline": "no apply_transform_mask"}
MIXES = {"PatchMix", "RandomCutMixV2", "RandomJigsaw", "RandomMixUpV2", "RandomMosaic"}


def test_every_augmentation_kornia_takes_a_mask_for_gets_the_mask_ways_and_only_those() -> None:
    maskless = {name.rpartition(".")[2]: why for name, why in maskless_augmentations().items()}
    three_d = {name for name in maskless if name.endswith("3D")}
    assert set(maskless) - three_d == set(REFUSING) | MIXES | {"RandomTransplantation"}, maskless
    assert all(maskless[name].startswith(REFUSING[name]) for name in REFUSING)
    assert all(maskless[name].startswith("a mix augmentation: kornia 0.9.0 refuses a mask for it on the CPU (NotImplementedError") for name in MIXES)
    masked = {call.name.rpartition(".")[2] for call in device_targets((MOVED_MASK,)) if call.masked}
    everything = {call.name.rpartition(".")[2] for call in device_targets((MOVED,)) if call.name.startswith("kornia.augmentation.")}
    assert masked == everything - set(maskless) and len(masked) == 53
    ways = {name: [call.way for call in calls] for name, calls in SIMULATED_CALLS.items()}
    assert ways["kornia.augmentation.RandomAffine"] == list(WAYS)
    assert ways["kornia.augmentation.RandomFisheye"] == [MOVED, NOT_MOVED, NOT_MOVED_MIXED]


def test_whether_a_mix_augmentation_takes_a_mask_is_asked_of_the_installed_release() -> None:
    """kornia 0.9.0rc1 takes a mask for all five mix augmentations and 0.9.0 for none: one CPU call
    through AugmentationSequential decides, the RNG left as it was (collection draws nothing)."""
    from kornia.augmentation import RandomMixUpV2

    from suites.kornia_sweeps.targets import mask_refused

    before = torch.get_rng_state()
    assert mask_refused(RandomHorizontalFlip) is None  # takes one
    assert mask_refused(RandomMixUpV2).startswith("a mix augmentation: kornia 0.9.0 refuses a mask for it on the CPU (NotImplementedError")
    assert torch.equal(torch.get_rng_state(), before)


class MixUpWhoseMaskPathBroke(RandomHorizontalFlip):
    """A mask path failing with anything but kornia's NotImplementedError: a regression to show, never a refusal."""

    def apply_transform_mask(self, input, params, flags, transform=None):
        raise RuntimeError("shape mismatch in the mask's blend")


class SignatureOlderThanTheTable(RandomHorizontalFlip):
    def __init__(self, **kwargs: object) -> None:
        pytest.skip("kornia 0.6.10: MixUp.__init__() got an unexpected keyword argument (arguments table written for 0.9.0)")


@pytest.mark.parametrize("cls", [MixUpWhoseMaskPathBroke, SignatureOlderThanTheTable], ids=["broken mask path", "older signature"])
def test_only_kornias_not_implemented_is_a_refusal(cls: type) -> None:
    """Anything else leaves the mask ways in: their CPU reference fails loudly, or skips naming the release."""
    from suites.kornia_sweeps.targets import mask_refused

    assert mask_refused(cls) is None
