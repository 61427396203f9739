"""Every numeric threshold of an oracle, pinned from both sides through the call the suite makes:
a fault PAST times the threshold is caught, and the worst correct result measured by
bench/oracle_calibration.py (bench/jpeg_block_calibration.py for the JPEG block) passes. The
margin (threshold / worst correct) is written beside each. A tolerance made 10x looser fails the
"past" test; one made 10x stricter than the calibration allows fails the "correct" test.

Faults are uniform: every element (or the whole mean) sits at the stated fraction of its
allowance, so "1.5x the threshold" is exact, not a worst case of a random draw.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
import torch
from kornia.augmentation import RandomPlanckianJitter

from fixtures.known_bugs.outcomes import BugObserved
from suites.kornia_2791_planckian_jitter import test_planckian_jitter_device as jitter_direct
from suites.kornia_2837_jpeg_device import chain
from suites.kornia_2837_jpeg_device import test_jpeg_device as codec
from suites.kornia_sweeps import test_device_sweep as sweep
from suites.sam2_460_cudagraph import oracles as sam2
from suites.sam2_460_cudagraph import test_cudagraph_control as graph_control
from suites.sam2_460_cudagraph.position_encodings import CHANNELS, CachedSinePosition, encoder_and_eager_twin, frames
from suites.torchvision_8587_encode_jpeg.oracle import BLOCK, MAX_BLOCK_ABS_DIFF, Where, check_decoded
from tests.test_fault_kornia_oracles import WrongAfterFirstCall

PAST = 1.5  # the bound: a fault no further past the threshold than twice it

# Worst correct result as a fraction of the threshold, rounded up (`python bench/oracle_calibration.py`,
# torch 2.15.0, kornia 0.9.0, this machine; the JPEG block from bench/jpeg_block_calibration.py).
# The margin (threshold / worst correct) is the factor a tolerance may be tightened before a
# correct run fails; PAST is how far past it a fault is caught.
CALIBRATED = {
    "kornia-2791 moved output": 0.005,  # float32 vs float64 output, allclose(1e-6, 1e-5): margin 200x
    "kornia-2837 codec output": 0.0001,  # mean |float32 - float64| 9e-8 vs 1e-3: margin 10,000x
    "kornia-2837 codec gradient": 0.015,  # mean 1.5e-5 vs 1e-3: margin 67x
    "kornia-2837 chain pieces": 0.058,  # mean 5.8e-8 vs 1e-6: margin 17x
    "sam2-460 compiled vs eager (fp32)": 0.0008,  # inductor vs eager, allclose(1e-4, 1e-4): margin 1,250x
    "sam2-460 TF32 operands vs fp32": 0.152,  # TF32-rounded operands, allclose(2e-3, 2e-3): margin 6.6x
    "sam2-460 control read-back": 0.0001,  # x @ x float32 vs float64, allclose(1e-3, 1e-3): margin 10,000x
    "kornia sweeps simulated vs cpu": 0.127,  # simulated vs CPU run of every swept call: margin 7.9x
    "torchvision-8587 8x8 block": 1.19 / MAX_BLOCK_ABS_DIFF,  # worst block 1.19 vs 4.0: margin 3.4x
}
SIDES = [pytest.param(PAST, True, id="past-threshold"), pytest.param(None, False, id="worst-correct")]


def fraction_for(name: str, past: float | None) -> float:
    return CALIBRATED[name] if past is None else past


def expect(caught: bool, match: str):  # noqa: ANN201 - a context manager
    return pytest.raises(BugObserved, match=match) if caught else contextlib.nullcontext()


def allowance_shift(expected: torch.Tensor, atol: float, rtol: float, fraction: float) -> torch.Tensor:
    """`expected` moved by `fraction` of allclose's allowance at every element."""
    return expected + fraction * (atol + rtol * expected.abs())


class ShiftedOnMoveJitter(RandomPlanckianJitter):
    """The moved instance's output off by a fraction of the 2791 oracle's allowance."""

    fraction = 0.0

    def _apply(self, fn, *args, **kwargs):  # noqa: ANN001, ANN202
        self.moved = True
        return super()._apply(fn, *args, **kwargs)

    def forward(self, *args, **kwargs):  # noqa: ANN202
        out = super().forward(*args, **kwargs)
        return allowance_shift(out, jitter_direct.ATOL, jitter_direct.RTOL, self.fraction) if getattr(self, "moved", False) else out


@pytest.mark.catches("suites/kornia_2791_planckian_jitter/test_planckian_jitter_device.py::moved_run_matches_cpu")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_kornia_2791_output_tolerance(monkeypatch: pytest.MonkeyPatch, past: float | None, caught: bool) -> None:
    monkeypatch.setattr(ShiftedOnMoveJitter, "fraction", fraction_for("kornia-2791 moved output", past))
    monkeypatch.setattr(jitter_direct, "RandomPlanckianJitter", ShiftedOnMoveJitter)
    with expect(caught, "differs from CPU"):
        jitter_direct.moved_run_matches_cpu("blackbody", None, 4, torch.device("cpu"))


@pytest.mark.catches(
    "suites/kornia_2837_jpeg_device/test_jpeg_device.py::test_codec_on_device_matches_cpu",
    "suites/kornia_2837_jpeg_device/test_jpeg_device.py::test_codec_gradient_on_device_matches_cpu",
    "suites/kornia_2837_jpeg_device/test_jpeg_device.py::_observe_close",
)
@pytest.mark.parametrize(
    ("name", "test", "fault"),
    [
        pytest.param("kornia-2837 codec output", "test_codec_on_device_matches_cpu", lambda out, image, quality, shift: out + shift, id="output"),
        pytest.param(
            "kornia-2837 codec gradient", "test_codec_gradient_on_device_matches_cpu",
            lambda out, image, quality, shift: out + shift * (image - image.detach()), id="gradient",  # zero forward, + shift per gradient element
        ),
    ],
)
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_kornia_2837_codec_mean_tolerance(
    monkeypatch: pytest.MonkeyPatch, name: str, test: str, fault: Callable, past: float | None, caught: bool
) -> None:
    shift = fraction_for(name, past) * codec.MEAN_ABS_TOLERANCE
    wrong = WrongAfterFirstCall(codec.jpeg_codec_differentiable, lambda out, image, quality: fault(out, image, quality, shift))
    monkeypatch.setattr(codec, "jpeg_codec_differentiable", wrong)
    with expect(caught, "differs from CPU: mean"):
        getattr(codec, test)("cpu", None, (1, 3, 16, 16), [50.0])


@pytest.mark.catches("suites/kornia_2837_jpeg_device/test_jpeg_device.py::test_chain_piece_on_device_matches_cpu")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_kornia_2837_chain_tolerance(monkeypatch: pytest.MonkeyPatch, past: float | None, caught: bool) -> None:
    shift = fraction_for("kornia-2837 chain pieces", past) * codec.CHAIN_MEAN_ABS_TOLERANCE
    monkeypatch.setitem(chain.CHAIN_PIECES, "gaussian_blur2d", WrongAfterFirstCall(chain.CHAIN_PIECES["gaussian_blur2d"], lambda out, device: out + shift))
    with expect(caught, "gaussian_blur2d on cpu differs from CPU"):
        codec.test_chain_piece_on_device_matches_cpu("cpu", None, "gaussian_blur2d")


@pytest.mark.catches("suites/sam2_460_cudagraph/oracles.py::check_against_eager", "suites/sam2_460_cudagraph/oracles.py::compare_output")
@pytest.mark.parametrize(
    ("name", "tf32"), [pytest.param("sam2-460 compiled vs eager (fp32)", False, id="fp32"), pytest.param("sam2-460 TF32 operands vs fp32", True, id="tf32")]
)
@pytest.mark.parametrize(("past", "caught"), SIDES)
@torch.no_grad()
def test_fault_sam2_460_compiled_against_eager_tolerance(name: str, tf32: bool, past: float | None, caught: bool) -> None:
    """The tolerance test_compiled_encoder passes (comparison_tolerance under the precision in force)."""
    encoder, eager = encoder_and_eager_twin(CachedSinePosition(CHANNELS, fixed=True), "cpu")
    atol, rtol = tolerance = sam2.comparison_tolerance(tf32, False)
    fraction = fraction_for(name, past)
    with expect(caught, "differs from eager"):
        sam2.check_against_eager(lambda frame: allowance_shift(encoder(frame), atol, rtol, fraction), eager, frames("cpu"), tolerance)


@pytest.mark.catches("suites/sam2_460_cudagraph/test_cudagraph_control.py::close")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_sam2_460_control_read_back_tolerance(past: float | None, caught: bool) -> None:
    """The controls tell an intact first output from an overwritten one by `close`: a read-back
    just past its tolerance is overwritten, the worst correct one intact."""
    first, _ = graph_control.inputs("cpu")
    expected = graph_control.square(first)
    read_back = allowance_shift(expected, graph_control.CLOSE_ATOL, graph_control.CLOSE_RTOL, fraction_for("sam2-460 control read-back", past))
    assert graph_control.close(read_back, expected) is not caught


@pytest.mark.catches("suites/kornia_sweeps/test_device_sweep.py::value_mismatch")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_sweep_value_tolerance(past: float | None, caught: bool) -> None:
    expected = torch.rand(2, 3, 8, 8) * 4 - 2
    actual = allowance_shift(expected, sweep.ATOL, sweep.RTOL, fraction_for("kornia sweeps simulated vs cpu", past))
    assert (sweep.value_mismatch((actual, expected.long()), (expected, expected.long())) is not None) is caught


@pytest.mark.catches("suites/torchvision_8587_encode_jpeg/oracle.py::check_decoded")
@pytest.mark.parametrize(("past", "caught"), SIDES)
def test_fault_torchvision_8587_block_threshold(past: float | None, caught: bool) -> None:
    """One 8x8 block off by `fraction` of the block threshold, in levels of 255, the rest exact."""
    source = torch.full((3, 32, 48), 128, dtype=torch.uint8)
    decoded = source.clone()
    levels = fraction_for("torchvision-8587 8x8 block", past) * MAX_BLOCK_ABS_DIFF
    # Whole levels where they can be: part of the block at ceil, the rest at floor, mean = levels.
    block = decoded[:, 8 : 8 + BLOCK, 16 : 16 + BLOCK].reshape(-1)
    low, extra = int(levels), levels - int(levels)
    raised = round(extra * block.numel())
    block += low
    block[:raised] += 1
    decoded[:, 8 : 8 + BLOCK, 16 : 16 + BLOCK] = block.reshape(3, BLOCK, BLOCK)
    with expect(caught, "worst 8x8 block"):
        check_decoded(source, decoded, Where("cpu", 32, 48, 0), "planted")
