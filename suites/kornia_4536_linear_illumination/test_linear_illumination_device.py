"""kornia-4536, direct: RandomLinearIllumination and RandomLinearCornerIllumination moved to
`device` must draw their illumination pattern there and give the CPU result under the parameters
they drew.

Their generators took placement from the constructor's plain tuples (the CPU) while `.to()` moved
their samplers: from 0.8.2, whose rewrite of the sign stopped moving it, the sign is drawn on the
module's device and multiplies a gain factor and ramps made on the CPU, PyTorch's device mismatch
while the parameters are drawn. Parameters given to the call skip the generator, so the module
draws its own here, on the device. On cpu the body is a control; on simcuda:N it runs on the
simulated CUDA device (simulated evidence); on a real GPU (argued, not run here) the same mismatch
is raised, as the upstream report shows on CUDA and MPS.
"""

from __future__ import annotations

import copy

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from suites.device_oracle import check_matches_cpu, check_runs_on

RandomLinearCornerIllumination, RandomLinearIllumination = library_api(
    "kornia.augmentation", "RandomLinearCornerIllumination", "RandomLinearIllumination", first_release="0.7.2"
)

# One add and a clamp per pixel: a correct device differs from the CPU by rounding only.
ATOL = 1e-6
CASES = [
    pytest.param(lambda: RandomLinearIllumination(p=1.0), id="RandomLinearIllumination"),
    pytest.param(lambda: RandomLinearCornerIllumination(p=1.0), id="RandomLinearCornerIllumination"),
]


def on_cpu(params: dict) -> dict:
    return {key: value.cpu() if isinstance(value, torch.Tensor) else value for key, value in params.items()}


@pytest.mark.known_bug("kornia-4536", evidence="direct")
@pytest.mark.parametrize("make", CASES)
def test_moved_illumination_draws_on_device_and_matches_cpu(device: str, simulation: object | None, make) -> None:
    target = torch.device(device)
    image = torch.rand(2, 3, 16, 24)
    illumination = make()
    name = type(illumination).__name__
    moved = copy.deepcopy(illumination).to(target)
    drawn: dict = {}

    def draw_and_apply() -> torch.Tensor:
        drawn.update(moved.forward_parameters(image.shape))  # the generator on the module's device: where it fails
        return moved(image.to(target), params=drawn)

    check_runs_on(draw_and_apply, target, simulation, f"{name} (moved)")
    expected = illumination(image.clone(), params=on_cpu(drawn))
    check_matches_cpu(lambda: moved(image.to(target), params=drawn), target, simulation, f"{name} (moved, its parameters again)", expected, ATOL)
