"""kornia-4415, direct: RandomShear and RandomAffine with a scalar or 2-tuple shear, moved to
`device`, must run there and give the CPU result under the same parameters.

`make_samplers` (run by `.to()`) stacks the x shear range, which `_range_bound` builds on the CPU
because the call site hands it no device, with a y range made on the requested device: on a CUDA
device, PyTorch's device mismatch at `.to()`, before any input is seen. A 4-tuple shear stacks two
CPU ranges and survives (so it is not a case here). On cpu the body is a control; on simcuda:N it
runs on the simulated CUDA device (simulated evidence); on a real GPU (argued, not run here) the
same mismatch is raised, as the upstream report shows on another non-CPU device (mps).
"""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from suites.device_oracle import check_matches_cpu

RandomAffine, RandomShear = library_api("kornia.augmentation", "RandomAffine", "RandomShear", first_release="0.6.10")

# A warp of a random image: a correct device differs from the CPU by interpolation rounding.
ATOL = 1e-5
CASES = [
    pytest.param(lambda: RandomShear(5.0, p=1.0), id="RandomShear-scalar"),
    pytest.param(lambda: RandomShear((-5.0, 5.0), p=1.0), id="RandomShear-2-tuple"),
    pytest.param(lambda: RandomAffine(degrees=0.0, shear=5.0, p=1.0), id="RandomAffine-scalar-shear"),
    pytest.param(lambda: RandomAffine(degrees=0.0, shear=(5.0, 5.0), p=1.0), id="RandomAffine-2-tuple-shear"),
]


@pytest.mark.known_bug("kornia-4415", evidence="direct")
@pytest.mark.usefixtures("full_fp32_precision")
@pytest.mark.parametrize("make", CASES)
def test_sheared_augmentation_moved_to_device_matches_cpu(device: str, simulation: object | None, make) -> None:
    target = torch.device(device)
    image = torch.rand(2, 3, 16, 16)
    augmentation = make()
    name = type(augmentation).__name__
    params = augmentation.forward_parameters(image.shape)
    expected = augmentation(image.clone(), params=params)
    moved = {key: value.to(target) for key, value in params.items()}
    check_matches_cpu(lambda: augmentation.to(target)(image.to(target), params=moved), target, simulation, f"{name} (moved)", expected, ATOL)
