"""kornia-2837, direct: the differentiable JPEG codec and its chain on `device` against the CPU.

On cpu this is a control. On a GPU the buggy commit raised a device mismatch, which the shared
classifier turns into BugObserved; the numeric comparison is argued, not run here.
"""

from __future__ import annotations

import kornia
import pytest
import torch

if not hasattr(kornia.enhance, "jpeg_codec_differentiable"):
    pytest.skip(f"kornia {kornia.__version__} has no jpeg_codec_differentiable (first shipped in 0.7.2)", allow_module_level=True)

from kornia.enhance import jpeg_codec_differentiable  # noqa: E402 - only after the version guard

from fixtures.meta_proxy import CLEAN, FINDING, classify_call  # noqa: E402
from fixtures.outcomes import BugObserved, observe  # noqa: E402
from suites.kornia_2837_jpeg_device.chain import CHAIN_PIECES  # noqa: E402

# The codec rounds (a smooth approximation around torch.round): a CPU/GPU float difference can
# flip an isolated coefficient by one quantisation step, so compare the mean, not the maximum.
MEAN_ABS_TOLERANCE = 1e-3
# Sides are multiples of 16: kornia 0.7.2 (the first release of the function) requires it.
CODEC_CASES = [
    pytest.param((4, 3, 112, 112), [15.0] * 4, id="upstream-4x112-q15"),
    pytest.param((1, 3, 16, 16), [50.0], id="1x16-shared-q50"),
    pytest.param((2, 3, 48, 64), [10.0, 90.0], id="2x48x64-per-image-q"),
]


def _mean_abs_difference(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return (actual.detach().cpu() - expected.detach()).abs().mean().item()


def _run_on_device(call, device: torch.device, what: str) -> torch.Tensor:
    run = classify_call(call, device)
    observe(run.kind == FINDING, f"{what} on {device}: {run.detail}")
    assert run.kind == CLEAN, f"harness: {what} failed on {device} for another reason: {run.detail}"
    return run.output


def _codec_and_input_grad(image: torch.Tensor, quality: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    image = image.clone().requires_grad_(True)
    output = jpeg_codec_differentiable(image, quality)
    output.sum().backward()
    return output, image.grad


@pytest.mark.known_bug("kornia-2837", evidence="direct")
@pytest.mark.parametrize(("shape", "qualities"), CODEC_CASES)
def test_codec_on_device_matches_cpu(device: str, shape: tuple[int, ...], qualities: list[float]) -> None:
    target = torch.device(device)
    image, quality = torch.rand(shape), torch.tensor(qualities)
    expected_out, expected_grad = _codec_and_input_grad(image, quality)
    out, grad = _run_on_device(
        lambda: _codec_and_input_grad(image.to(target), quality.to(target)), target, "jpeg_codec_differentiable"
    )
    for name, actual, expected in (("output", out, expected_out), ("input gradient", grad, expected_grad)):
        difference = _mean_abs_difference(actual, expected)
        if difference > MEAN_ABS_TOLERANCE:
            raise BugObserved(f"{name} on {device} differs from CPU: mean |diff| {difference:.3g}")


@pytest.mark.known_bug("kornia-2837", evidence="direct")
@pytest.mark.parametrize("piece", sorted(CHAIN_PIECES))
def test_chain_piece_on_device_matches_cpu(device: str, piece: str) -> None:
    target = torch.device(device)
    torch.manual_seed(0)
    expected = CHAIN_PIECES[piece](torch.device("cpu"))
    torch.manual_seed(0)  # the same random image, drawn on the CPU then moved
    actual = _run_on_device(lambda: CHAIN_PIECES[piece](target), target, piece)
    difference = _mean_abs_difference(actual, expected)
    observe(difference > 1e-6, f"{piece} on {device} differs from CPU: mean |diff| {difference:.3g}")
