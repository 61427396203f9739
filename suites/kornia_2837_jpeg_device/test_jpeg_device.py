"""kornia-2837, direct: the differentiable JPEG codec and its chain on `device` against the CPU.

On cpu this is a control. On simcuda:N the same bodies, forward and backward, run on the simulated
CUDA device (simulated evidence; its autograd runs on the CPU data, the gradient shown on the
device). On a GPU the buggy commit raised a device
mismatch, which the shared classifier turns into BugObserved; that is argued, not run here.
Every body runs in full fp32: the codec and the chain go through convolutions and matmuls, which
cuDNN runs in TF32 by default on Ampere and later, enough to break the chain's 1e-6 comparison
(argued, not run).
"""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from fixtures.known_bugs.outcomes import observe
from suites.device_oracle import check_runs_on
from suites.kornia_2837_jpeg_device.chain import CHAIN_PIECES

jpeg_codec_differentiable = library_api("kornia.enhance", "jpeg_codec_differentiable", first_release="0.7.2")

# TF32 off while the device result is computed and compared with the CPU's.
pytestmark = [pytest.mark.known_bug("kornia-2837", evidence="direct"), pytest.mark.usefixtures("full_fp32_precision")]
# The codec rounds (a smooth approximation around torch.round): a CPU/GPU float difference can
# flip an isolated coefficient by one quantisation step, so compare the mean, not the maximum.
MEAN_ABS_TOLERANCE = 1e-3
# The chain's pieces (a kernel, a blur, an antialiased resize) round nothing: a correct device
# differs from the CPU by float rounding only (bench/oracle_calibration.py).
CHAIN_MEAN_ABS_TOLERANCE = 1e-6
# Sides are multiples of 16: kornia 0.7.2 (the first release of the function) requires it.
SMALLEST_SHAPE = (1, 3, 16, 16)
CODEC_CASES = [
    pytest.param((4, 3, 112, 112), [15.0] * 4, id="upstream-4x112-q15"),
    pytest.param(SMALLEST_SHAPE, [50.0], id="1x16-shared-q50"),
    pytest.param((2, 3, 48, 64), [10.0, 90.0], id="2x48x64-per-image-q"),
]


def _mean_abs_difference(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return (actual.detach().cpu() - expected.detach()).abs().mean().item()


def _codec_input_grad(image: torch.Tensor, quality: torch.Tensor) -> torch.Tensor:
    image = image.clone().requires_grad_(True)
    jpeg_codec_differentiable(image, quality).sum().backward()
    return image.grad


def _codec_case_device(device: str, simulation: object | None, shape: tuple[int, ...]) -> torch.device:
    """The device a codec case runs on. The simulation costs 0.1-0.4 ms per op and placement does
    not depend on the image size: on it only the smallest case runs, keeping the default run
    within its time budget."""
    if simulation is not None and tuple(shape) != SMALLEST_SHAPE:
        pytest.skip(f"simulated device: only the smallest case {SMALLEST_SHAPE} runs (placement does not depend on size)")
    return torch.device(device)


def _observe_close(name: str, device: str, actual: torch.Tensor, expected: torch.Tensor) -> None:
    difference = _mean_abs_difference(actual, expected)
    observe(difference > MEAN_ABS_TOLERANCE, f"{name} on {device} differs from CPU: mean |diff| {difference:.3g}")


@pytest.mark.parametrize(("shape", "qualities"), CODEC_CASES)
def test_codec_on_device_matches_cpu(
    device: str, simulation: object | None, shape: tuple[int, ...], qualities: list[float]
) -> None:
    target = _codec_case_device(device, simulation, shape)
    image, quality = torch.rand(shape), torch.tensor(qualities)
    expected = jpeg_codec_differentiable(image, quality)
    actual = check_runs_on(
        lambda: jpeg_codec_differentiable(image.to(target), quality.to(target)), target, simulation, "jpeg_codec_differentiable"
    )
    _observe_close("output", device, actual, expected)


@pytest.mark.parametrize(("shape", "qualities"), CODEC_CASES)
def test_codec_gradient_on_device_matches_cpu(
    device: str, simulation: object | None, shape: tuple[int, ...], qualities: list[float]
) -> None:
    target = _codec_case_device(device, simulation, shape)
    image, quality = torch.rand(shape), torch.tensor(qualities)
    actual = check_runs_on(
        lambda: _codec_input_grad(image.to(target), quality.to(target)), target, simulation, "jpeg_codec_differentiable backward"
    )
    expected = _codec_input_grad(image, quality)
    _observe_close("input gradient", device, actual, expected)


@pytest.mark.parametrize("piece", sorted(CHAIN_PIECES))
def test_chain_piece_on_device_matches_cpu(device: str, simulation: object | None, piece: str) -> None:
    target = torch.device(device)
    torch.manual_seed(0)
    expected = CHAIN_PIECES[piece](torch.device("cpu"))
    torch.manual_seed(0)  # the same random image, drawn on the CPU then moved
    actual = check_runs_on(lambda: CHAIN_PIECES[piece](target), target, simulation, piece)
    difference = _mean_abs_difference(actual, expected)
    observe(difference > CHAIN_MEAN_ABS_TOLERANCE, f"{piece} on {device} differs from CPU: mean |diff| {difference:.3g}")
