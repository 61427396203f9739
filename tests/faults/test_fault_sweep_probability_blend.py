"""The simulated device sweep's mixed batch (suites/kornia_sweeps/targets.py: the module left on
the CPU, p=0.5 and a coin that transforms some elements of the batch and skips the others) reaches
kornia's probability blend, which the p=1.0 calls skip (kornia's fast path). A kornia-like
augmentation whose blend gets its untransformed elements, or their identity matrices, on the CPU,
and kornia-4151 put back on the installed kornia (PR 4164 undone: the blend's gate left on the CPU)
are findings of the mixed-batch way and clean in both p=1.0 ways; the unplanted classes are clean
every way. A coin that did not mix is inconclusive, never clean; a class whose `p` is the whole
batch's gets no mixed-batch way."""

from __future__ import annotations

import pytest
import torch
from kornia.augmentation import RandomAffine, RandomHorizontalFlip

from fixtures.proxies.meta_proxy import CLEAN, DEVICE_ERROR, FINDING, INCONCLUSIVE, ProxyResult, classify_call
from suites.kornia_sweeps import test_stream_sweep as stream_sweep
from suites.kornia_sweeps.targets import (
    MOVED,
    NOT_MOVED,
    NOT_MOVED_MIXED,
    augmentation_call,
    device_targets,
    seed_a_mixed_coin,
    unmixed_augmentations,
)
from suites.kornia_sweeps.test_device_sweep import SIMULATED_CALLS, harness_error
from tests.faults.test_fault_kornia_4151 import blend_gates_left_on_the_cpu
from tests.helpers import sweep_ways

WAYS = (MOVED, NOT_MOVED, NOT_MOVED_MIXED)


class SkippedElementsLeftOnTheCpu(RandomHorizontalFlip):
    """The blend's untransformed elements handed back on the CPU."""

    def apply_non_transform(self, input, params, flags, transform=None):
        return super().apply_non_transform(input, params, flags, transform).cpu()


class IdentityMatricesOnTheCpu(RandomAffine):
    """The skipped elements' transformation matrices (identities) made on the CPU (an affine's
    matrices are made in forward; a flip's only when read)."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__(degrees=10.0, p=p)

    def identity_matrix(self, input):
        return super().identity_matrix(input).cpu()


class CoinAlwaysHeads(RandomHorizontalFlip):
    """A coin that transforms every element whatever p says (as a kornia drawing something before
    its coin may do to the seed the sweep chose)."""

    def __batch_prob_generator__(self, batch_shape, p, p_batch, same_on_batch):
        return torch.ones(batch_shape[0], device=self.device)


class CoinAlwaysTailsAndSkippedOnTheCpu(RandomHorizontalFlip):
    """A coin that skips every element, and the skipped elements handed back through a CPU tensor:
    a path p=1.0 never takes."""

    def __batch_prob_generator__(self, batch_shape, p, p_batch, same_on_batch):
        return torch.zeros(batch_shape[0], device=self.device)

    def apply_non_transform(self, input, params, flags, transform=None):
        return input + torch.zeros_like(input, device="cpu")


def swept(cls: type) -> dict[str, ProxyResult]:
    return sweep_ways.swept(cls, WAYS)


def found_only_by_the_mixed_batch(rows: dict[str, ProxyResult]) -> None:
    assert [way for way in WAYS if rows[way].kind != CLEAN] == [NOT_MOVED_MIXED], rows
    assert (rows[NOT_MOVED_MIXED].kind, rows[NOT_MOVED_MIXED].found) == (FINDING, DEVICE_ERROR), rows
    assert "Expected all tensors to be on the same device" in rows[NOT_MOVED_MIXED].detail


@pytest.mark.catches("suites/kornia_sweeps/test_device_sweep.py::simulated_result")
@pytest.mark.parametrize("planted", [SkippedElementsLeftOnTheCpu, IdentityMatricesOnTheCpu])
def test_fault_blend_on_the_wrong_device_is_found_by_the_mixed_batch_only(planted: type) -> None:
    found_only_by_the_mixed_batch(swept(planted))


@pytest.mark.catches("suites/kornia_sweeps/test_device_sweep.py::simulated_result")
@pytest.mark.parametrize("cls", [RandomHorizontalFlip, RandomAffine], ids=["images-blend", "2d-matrix-blend"])
def test_fault_kornia_4151_undone_is_found_by_the_mixed_batch_only(monkeypatch: pytest.MonkeyPatch, cls: type) -> None:
    """0.9.0rc1's 2D blends: the p=1.0 calls skip them, why the sweep never saw kornia-4151 there."""
    blend_gates_left_on_the_cpu(monkeypatch)
    found_only_by_the_mixed_batch(swept(cls))


@pytest.mark.parametrize("cls", [RandomHorizontalFlip, RandomAffine])
def test_the_unplanted_classes_are_clean_every_way(cls: type) -> None:
    rows = swept(cls)
    assert {way: row.kind for way, row in rows.items()} == dict.fromkeys(WAYS, CLEAN), rows


def test_a_coin_that_did_not_mix_is_inconclusive_never_clean() -> None:
    rows = swept(CoinAlwaysHeads)
    mixed = rows[NOT_MOVED_MIXED]
    assert mixed.kind == INCONCLUSIVE and mixed.detail.startswith("no CPU result to compare with: CoinNotMixed: "), mixed
    assert "the coin transformed 2 of 2 elements: no mixed batch" in mixed.detail
    assert (rows[MOVED].kind, rows[NOT_MOVED].kind) == (CLEAN, CLEAN)


def test_the_chosen_seed_mixes_the_coin_and_follows_the_state_it_started_from() -> None:
    chosen = []
    for seed in range(50):
        torch.manual_seed(seed)
        chosen.append(seed_a_mixed_coin(2))
        assert int((torch.rand(2) < 0.5).sum()) == 1, seed
    torch.manual_seed(0)
    assert seed_a_mixed_coin(2) == chosen[0] and len(set(chosen)) == 50


def test_a_batch_of_one_cannot_be_mixed() -> None:
    with pytest.raises(ValueError, match="a batch of 1 cannot be mixed"):
        seed_a_mixed_coin(1)


# kornia 0.9.0: each of these passes `p` on as `p_batch` or fixes `same_on_batch=True` (one coin for
# the batch: a mixed batch cannot happen), and PadTo has no probability.
BATCH_WIDE = {
    "CenterCrop", "CenterCrop3D", "LongestMaxSize", "PatchMix", "RandomCrop", "RandomCrop3D", "RandomCutMixV2",
    "RandomMixUpV2", "RandomResizedCrop", "Resize", "SmallestMaxSize",
}
ONE_COIN = {"Denormalize", "Normalize"}


def test_every_augmentation_with_a_coin_per_element_gets_a_mixed_batch_and_only_those() -> None:
    unmixed = {name.rpartition(".")[2]: why for name, why in unmixed_augmentations().items()}
    assert set(unmixed) == BATCH_WIDE | ONE_COIN | {"PadTo"}, unmixed
    assert all(unmixed[name].startswith("p is the whole batch's probability (p=1.0, p_batch=0.5)") for name in BATCH_WIDE)
    assert all(unmixed[name].startswith("one coin for the whole batch") for name in ONE_COIN)
    mixed = {call.name.rpartition(".")[2] for call in device_targets((NOT_MOVED_MIXED,)) if call.mixed}
    everything = {call.name.rpartition(".")[2] for call in device_targets((MOVED,)) if call.name.startswith("kornia.augmentation.")}
    assert mixed == everything - set(unmixed) and len(mixed) == 58
    ways = {name: [call.way for call in calls] for name, calls in SIMULATED_CALLS.items()}
    assert ways["kornia.augmentation.RandomAffine"][:3] == list(WAYS) and NOT_MOVED_MIXED not in ways["kornia.augmentation.Resize"]


def test_the_stream_sweep_takes_no_mixed_batch() -> None:
    assert {call.way for call in stream_sweep.CALLS.values()} == {MOVED, ""}  # augmentations moved, and the functions


def test_a_device_error_on_the_path_an_unmixed_coin_took_is_still_a_finding() -> None:
    """No mixed batch, so no CPU result to compare values with; but the device's run still goes,
    and its device error is a finding (before, the row was inconclusive and the error lost)."""
    rows = swept(CoinAlwaysTailsAndSkippedOnTheCpu)
    assert (rows[MOVED].kind, rows[NOT_MOVED].kind) == (CLEAN, CLEAN), rows
    assert (rows[NOT_MOVED_MIXED].kind, rows[NOT_MOVED_MIXED].found) == (FINDING, DEVICE_ERROR), rows


def test_on_the_tables_release_a_cpu_failure_is_the_harnesss_error_and_an_unmixed_coin_is_not() -> None:
    call = augmentation_call(CoinAlwaysHeads, NOT_MOVED_MIXED)
    torch.manual_seed(0)
    unmixed = classify_call(lambda: call.call(torch.device("cpu")), "cpu")
    assert unmixed.kind == INCONCLUSIVE and harness_error(call, unmixed, "0.9.0") is None, unmixed
    failed = ProxyResult(FINDING, "RuntimeError: bad arguments", found=DEVICE_ERROR)
    assert harness_error(call, failed, "0.9.0") == (
        f"harness: the sweep's arguments for {call.name} (module not moved, mixed batch) fail on CPU: RuntimeError: bad arguments"
    )
    assert harness_error(call, failed, "0.6.10") is None  # a release older than the table: its own failure
