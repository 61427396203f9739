"""Each kornia oracle flags a deliberately faulty module or function (fault injection).

The faults copy the real bugs' shapes: kornia 0.7.1 kept `pl` as a plain attribute (2791); the
0.7.2-dev `gaussian()` built `tensor([[mean]])` without device= next to an arange on the input's
device (2837). The direct tests' numeric comparisons run the CPU reference first and the device
run second; on this machine both are on the CPU, so a fault that drifts after its first call
stands in for a device that computes something else.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from kornia.augmentation import RandomPlanckianJitter
from torch import nn

from fixtures.known_bugs.outcomes import BugObserved, Inconclusive
from fixtures.proxies.meta_proxy import CLEAN, DEVICE_ERROR, FINDING, INCONCLUSIVE
from fixtures.proxies.module_state import device_move_check, tensors_not_following_dtype, unregistered_tensors
from fixtures.sweeps.plugin import finding_key
from suites.device_oracle import check_runs_on
from suites.kornia_2791_planckian_jitter import test_planckian_jitter_device as jitter_direct
from suites.kornia_2791_planckian_jitter import test_planckian_jitter_state as jitter_proxy
from suites.kornia_2837_jpeg_device import chain, test_jpeg_chain_meta, test_jpeg_device
from suites.kornia_sweeps.targets import SweepCall
from suites.kornia_sweeps.test_device_sweep import device_result
from suites.kornia_sweeps.test_state_sweep import state_result


class PlainAttributeJitter(RandomPlanckianJitter):
    """kornia 0.7.1's layout on today's class: `pl` taken out of the buffers, kept as an attribute."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        table = self._buffers.pop("pl")
        self.pl = table


class CorruptedOnMoveJitter(RandomPlanckianJitter):
    """The GPU symptom's stand-in: after `.to()` the coefficients are not the ones it was built with."""

    def _apply(self, fn, *args, **kwargs):
        out = super()._apply(fn, *args, **kwargs)
        self.pl = self.pl * 1.1
        return out


class TableModule(nn.Module):
    """A minimal module whose table is a plain attribute (for the moves meta can do)."""

    def __init__(self, registered: bool) -> None:
        super().__init__()
        table = torch.rand(4, 2)
        if registered:
            self.register_buffer("table", table)
        else:
            self.table = table


def forgetful_gaussian(window_size: int, sigma: torch.Tensor) -> torch.Tensor:
    """The 0.7.2-dev gaussian(): the mean is made without device=."""
    x = torch.arange(window_size, device=sigma.device, dtype=sigma.dtype) - window_size // 2
    mean = torch.tensor([[0.0]])
    return torch.exp(-((x - mean) ** 2) / (2 * sigma**2))


def forgetful_arange_blur(image: torch.Tensor) -> torch.Tensor:
    """A row weighting whose positions come from torch.arange without device= (a 0-d CPU tensor
    would pass as a scalar; a (W,) one meets the image's device)."""
    weights = torch.exp(-((torch.arange(4.0) - 1.5) ** 2))
    return image * weights


@pytest.mark.catches(
    "suites/kornia_2791_planckian_jitter/test_planckian_jitter_state.py::test_pl_is_registered_state",
    "suites/kornia_2791_planckian_jitter/test_planckian_jitter_state.py::test_state_follows_to_float64",
)
def test_fault_plain_attribute_pl_is_flagged_by_the_2791_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jitter_proxy, "RandomPlanckianJitter", PlainAttributeJitter)
    with pytest.raises(BugObserved, match="pl"):
        jitter_proxy.test_pl_is_registered_state("blackbody")
    with pytest.raises(BugObserved, match="pl is torch.float32"):
        jitter_proxy.test_state_follows_to_float64("CIED")


@pytest.mark.catches("suites/kornia_2791_planckian_jitter/test_planckian_jitter_device.py::moved_run_matches_cpu")
def test_fault_corrupted_coefficients_are_flagged_by_the_2791_direct_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jitter_direct, "RandomPlanckianJitter", CorruptedOnMoveJitter)
    with pytest.raises(BugObserved, match="differs from CPU"):
        jitter_direct.moved_run_matches_cpu("blackbody", None, 4, torch.device("cpu"))


@pytest.mark.catches(
    "fixtures/proxies/module_state.py::unregistered_tensors",
    "fixtures/proxies/module_state.py::tensors_not_following_dtype",
    "fixtures/proxies/module_state.py::device_move_check",
)
def test_fault_unregistered_table_does_not_follow_to() -> None:
    faulty, correct = TableModule(registered=False), TableModule(registered=True)
    assert list(unregistered_tensors(faulty)) == ["table"] and not unregistered_tensors(correct)
    assert tensors_not_following_dtype(faulty, torch.float64) == {"table": torch.float32}
    assert tensors_not_following_dtype(correct, torch.float64) == {}
    moved = device_move_check(faulty, "meta")
    assert (moved.kind, moved.detail) == (FINDING, "after .to('meta'): table is on cpu")
    assert device_move_check(correct, "meta").kind == CLEAN


@pytest.mark.catches("suites/kornia_sweeps/test_state_sweep.py::state_result")
def test_fault_unregistered_table_is_a_state_sweep_finding() -> None:
    result = state_result(TableModule(registered=False))
    assert result.kind == FINDING and "not registered: table" in result.detail
    assert result.site == "table"  # left behind by both moves, named once
    assert state_result(TableModule(registered=True)).kind == CLEAN


@pytest.mark.catches("suites/kornia_2837_jpeg_device/test_jpeg_chain_meta.py::test_chain_piece_stays_on_meta")
def test_fault_forgetful_gaussian_is_flagged_by_the_2837_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(chain.CHAIN_PIECES, "gaussian", lambda d: forgetful_gaussian(5, torch.ones(1, 1, device=d)))
    with pytest.raises(BugObserved, match="not on the expected device meta"):
        test_jpeg_chain_meta.test_chain_piece_stays_on_meta("gaussian")


@pytest.mark.catches("suites/device_oracle.py::check_runs_on")
def test_fault_forgetful_gaussian_is_flagged_by_the_2837_direct_helper() -> None:
    """The direct test's device run goes through the same classifier; meta stands in for a GPU."""
    with pytest.raises(BugObserved, match="gaussian on meta"):
        check_runs_on(lambda: forgetful_gaussian(5, torch.ones(1, 1, device="meta")), torch.device("meta"), None, "gaussian")


@pytest.mark.catches("suites/kornia_sweeps/test_device_sweep.py::device_result")
def test_fault_forgetful_arange_is_a_device_sweep_finding() -> None:
    call = SweepCall("fake.blur", lambda d: forgetful_arange_blur(torch.rand(1, 3, 4, 4).to(d)))
    result = device_result(call, torch.device("meta"))
    assert result.kind == FINDING, result
    assert device_result(SweepCall("fake.ok", lambda d: torch.rand(1, 3).to(d) * 2), torch.device("meta")).kind == CLEAN


def needs_cpu(device: torch.device) -> torch.Tensor:
    """Runs on CPU only, failing elsewhere with a text the classifier cannot place."""
    if device.type != "cpu":
        raise RuntimeError(f"no kernel for {device}")
    return torch.ones(1)


@pytest.mark.catches("suites/kornia_sweeps/test_device_sweep.py::device_result")
def test_fault_an_error_only_on_a_gpu_is_a_recordable_device_error_finding() -> None:
    """Off meta, an unplaceable failure that CPU does not share is a finding the sweep can record
    (the allow-list key needs `found`); on meta it is the proxy's limit, inconclusive."""
    call = SweepCall("fake.gpu_only_failure", needs_cpu)
    on_gpu = device_result(call, torch.device("cuda:0"))  # the call fails before touching CUDA
    assert (on_gpu.kind, on_gpu.found) == (FINDING, DEVICE_ERROR), on_gpu
    assert finding_key(on_gpu, "") == DEVICE_ERROR
    assert device_result(call, torch.device("meta")).kind == INCONCLUSIVE


class TinyJitter(nn.Module):
    """A module without a sampler (so it can move to meta) holding `pl` as kornia did: a plain
    attribute (0.6.10-0.7.1), a buffer (0.7.2+), or a non-persistent buffer (follows .to(),
    absent from state_dict() by design: not the bug)."""

    def __init__(self, held_as: str) -> None:
        super().__init__()
        table = torch.rand(24, 3)
        if held_as == "attribute":
            self.pl = table
        else:
            self.register_buffer("pl", table, persistent=held_as == "buffer")


PROXY_TESTS = ("test_pl_is_registered_state", "test_state_follows_to_float64", "test_state_follows_to_meta")


@pytest.mark.catches(
    "suites/kornia_2791_planckian_jitter/test_planckian_jitter_state.py::test_pl_is_registered_state",
    "suites/kornia_2791_planckian_jitter/test_planckian_jitter_state.py::test_state_follows_to_float64",
    "suites/kornia_2791_planckian_jitter/test_planckian_jitter_state.py::test_state_follows_to_meta",
    "fixtures/proxies/module_state.py::held_tensors",
    "fixtures/proxies/module_state.py::registered_state",
    "fixtures/proxies/meta_proxy.py::same_device",
)
@pytest.mark.parametrize(
    ("proxy_test", "finding"),
    list(zip(
        PROXY_TESTS,
        ["pl is a plain tensor attribute", r"after .to\(torch.float64\): pl is torch.float32", r"after .to\('meta'\): pl is on cpu"],
    )),
)
def test_fault_plain_attribute_pl_in_a_tiny_module(monkeypatch: pytest.MonkeyPatch, proxy_test: str, finding: str) -> None:
    """Today's jitter cannot move to meta at all (its sampler calls .item()), so a tiny module with
    0.7.1's plain-attribute layout stands in for it, run through the suite's own test bodies."""
    monkeypatch.setattr(jitter_proxy, "RandomPlanckianJitter", lambda **kwargs: TinyJitter("attribute"))
    with pytest.raises(BugObserved, match=finding):
        getattr(jitter_proxy, proxy_test)("blackbody")


@pytest.mark.parametrize("held_as", ["buffer", "non-persistent"])
@pytest.mark.parametrize("proxy_test", PROXY_TESTS)
def test_registered_pl_is_clean_persistent_or_not(monkeypatch: pytest.MonkeyPatch, proxy_test: str, held_as: str) -> None:
    """No false alarm: a non-persistent buffer is missing from state_dict() yet follows the module."""
    monkeypatch.setattr(jitter_proxy, "RandomPlanckianJitter", lambda **kwargs: TinyJitter(held_as))
    assert ("pl" in TinyJitter(held_as).state_dict()) is (held_as == "buffer")
    getattr(jitter_proxy, proxy_test)("CIED")


class NonPersistentJitter(RandomPlanckianJitter):
    """Today's class with `pl` re-registered as a non-persistent buffer: it follows .to()."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register_buffer("pl", self._buffers.pop("pl"), persistent=False)


@pytest.mark.parametrize("proxy_test", PROXY_TESTS[:2])
def test_kornia_jitter_with_a_non_persistent_pl_is_clean(monkeypatch: pytest.MonkeyPatch, proxy_test: str) -> None:
    monkeypatch.setattr(jitter_proxy, "RandomPlanckianJitter", NonPersistentJitter)
    assert "pl" not in NonPersistentJitter(mode="blackbody").state_dict()
    getattr(jitter_proxy, proxy_test)("blackbody")


def test_a_jitter_without_pl_is_inconclusive_not_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jitter_proxy, "RandomPlanckianJitter", lambda **kwargs: nn.Identity())
    for proxy_test in PROXY_TESTS:
        with pytest.raises(Inconclusive, match="holds no tensor 'pl'"):
            getattr(jitter_proxy, proxy_test)("blackbody")


class WrongAfterFirstCall:
    """Wraps a function: the first call (the CPU reference) is left alone; every later call (the
    device run) hands its output and arguments to `fault`, which returns what the device computed."""

    def __init__(self, function: Callable, fault: Callable) -> None:
        self.function, self.fault, self.calls = function, fault, 0

    def __call__(self, *args):
        output = self.function(*args)
        self.calls += 1
        return output if self.calls == 1 else self.fault(output, *args)


def shifted_output(output: torch.Tensor, image: torch.Tensor, quality: torch.Tensor) -> torch.Tensor:
    return output + 0.05


def scaled_gradient(output: torch.Tensor, image: torch.Tensor, quality: torch.Tensor) -> torch.Tensor:
    """The same values with half as much again of the input gradient (the added term is zero forward)."""
    return output + 0.5 * (image - image.detach())


@pytest.mark.catches(
    "suites/kornia_2837_jpeg_device/test_jpeg_device.py::test_codec_on_device_matches_cpu",
    "suites/kornia_2837_jpeg_device/test_jpeg_device.py::test_codec_gradient_on_device_matches_cpu",
    "suites/kornia_2837_jpeg_device/test_jpeg_device.py::_observe_close",
)
@pytest.mark.parametrize(
    ("fault", "test", "reported"),
    [
        pytest.param(shifted_output, "test_codec_on_device_matches_cpu", "output on cpu differs from CPU", id="shifted-output"),
        pytest.param(
            scaled_gradient, "test_codec_gradient_on_device_matches_cpu", "input gradient on cpu differs from CPU", id="scaled-gradient"
        ),
    ],
)
def test_fault_device_codec_that_computes_something_else(
    monkeypatch: pytest.MonkeyPatch, fault: Callable, test: str, reported: str
) -> None:
    """The two runs (CPU reference and device, in either order) differ: the comparison must say so."""
    codec = WrongAfterFirstCall(test_jpeg_device.jpeg_codec_differentiable, fault)
    monkeypatch.setattr(test_jpeg_device, "jpeg_codec_differentiable", codec)
    with pytest.raises(BugObserved, match=reported):
        getattr(test_jpeg_device, test)("cpu", None, (1, 3, 16, 16), [50.0])


@pytest.mark.catches("suites/kornia_2837_jpeg_device/test_jpeg_device.py::test_chain_piece_on_device_matches_cpu")
def test_fault_device_chain_piece_that_computes_something_else(monkeypatch: pytest.MonkeyPatch) -> None:
    piece = WrongAfterFirstCall(chain.CHAIN_PIECES["gaussian"], lambda output, device: output + 1e-3)
    monkeypatch.setitem(chain.CHAIN_PIECES, "gaussian", piece)
    with pytest.raises(BugObserved, match="gaussian on cpu differs from CPU"):
        test_jpeg_device.test_chain_piece_on_device_matches_cpu("cpu", None, "gaussian")
