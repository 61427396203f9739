"""kornia-3028, direct: RandomGaussianIllumination left on the CPU, called on an image on `device`,
must give the CPU result under the same parameters.

The module holds no tensor state an input needs, so it is documented to work unmoved: its
parameter generator draws the illumination pattern (`params["gradient"]`) on the module's device,
the CPU, and kornia 0.7.3 to 0.8.2 added that pattern to the image as it was. On a CUDA image that
is PyTorch's device mismatch, which the shared classifier turns into BugObserved. On cpu the body
is a control; on simcuda:N it runs on the simulated CUDA device (simulated evidence); on a real
GPU (argued, not run here) the same mismatch is raised.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from suites.device_oracle import check_matches_cpu

RandomGaussianIllumination = library_api("kornia.augmentation", "RandomGaussianIllumination", first_release="0.7.2")

# One add and a clamp per pixel: a correct device differs from the CPU by rounding only.
ATOL = 1e-6


@pytest.mark.known_bug("kornia-3028", evidence="direct")
@pytest.mark.parametrize("shape", [(1, 3, 16, 16), (4, 3, 24, 32)], ids=["1x16", "4x24x32"])
def test_unmoved_illumination_on_device_matches_cpu(device: str, simulation: object | None, shape: tuple[int, ...]) -> None:
    target = torch.device(device)
    image = torch.rand(shape)
    illumination = RandomGaussianIllumination(p=1.0)
    # What forward draws for an unmoved module: the pattern on the CPU, whatever the image's device.
    params = illumination.forward_parameters(image.shape)
    expected = illumination(image.clone(), params=params)
    check_matches_cpu(
        lambda: illumination(image.to(target), params=params), target, simulation, "RandomGaussianIllumination (not moved)", expected, ATOL
    )
