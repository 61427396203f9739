"""kornia forward passes on the simulated cuda:1 equal the CPU result under one seed, stay on cuda:1
and allocate nowhere else (the simulation computes, it does not only place)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from simcuda import is_simulated, real_cpu, simulated_cuda

kornia = pytest.importorskip("kornia", reason="kornia is not installed")
K = pytest.importorskip("kornia.augmentation")

DEVICE = "cuda:1"
SEED = 7

CALLS: dict[str, Callable[[], Callable[[torch.Tensor], torch.Tensor]]] = {
    "RandomPlanckianJitter": lambda: K.RandomPlanckianJitter(p=1.0),
    "RandomAffine": lambda: K.RandomAffine(degrees=30.0, translate=(0.1, 0.1), p=1.0),
    "ColorJiggle": lambda: K.ColorJiggle(0.2, 0.2, 0.2, 0.1, p=1.0),
    "gaussian_blur2d": lambda: lambda x: kornia.filters.gaussian_blur2d(x, (5, 5), (1.5, 1.5)),
    "jpeg_codec_differentiable": lambda: lambda x: kornia.enhance.jpeg_codec_differentiable(x, torch.tensor([50.0], device=x.device)),
}


def run(make: Callable[[], Callable[[torch.Tensor], torch.Tensor]], image: torch.Tensor, device: str) -> torch.Tensor:
    torch.manual_seed(SEED)
    call = make()
    if isinstance(call, torch.nn.Module):
        call = call.to(device)
    torch.manual_seed(SEED + 1)
    return call(image.clone().to(device))  # some augmentations modify their input in place


@pytest.mark.parametrize("make", CALLS.values(), ids=CALLS.keys())
def test_cuda1_forward_equals_cpu(make: Callable[[], Callable[[torch.Tensor], torch.Tensor]]) -> None:
    image = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(SEED))
    expected = run(make, image, "cpu")
    with simulated_cuda() as sim:
        out = run(make, image, DEVICE)
        assert out.device == torch.device(DEVICE) and is_simulated(out)
        assert sim.foreign_allocations(allowed={DEVICE, "cpu"}) == []
        assert DEVICE in sim.devices_touched()
    torch.testing.assert_close(real_cpu(out), expected, atol=1e-5, rtol=1e-5)
