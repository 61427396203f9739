"""kornia-3562, direct: get_shear_matrix2d and get_shear_matrix3d with a center on `device` and a
shear left out (None) must run there and give the CPU's matrix.

Up to 0.8.2 each shear left out is made as `tensor([0.0]).repeat(batch)`, on the CPU whatever the
center's device, and meets the center's tensors in the matrix: on a CUDA device PyTorch's device
mismatch. With every shear given the functions never make one, so each case leaves one out. On cpu
the body is a control; on simcuda:N it runs on the simulated CUDA device (simulated evidence); on
a real GPU (argued, not run here) the same mismatch is raised, as upstream's report shows.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from suites.device_oracle import check_matches_cpu

get_shear_matrix2d, get_shear_matrix3d = library_api(
    "kornia.geometry.transform", "get_shear_matrix2d", "get_shear_matrix3d", first_release="0.4.1"
)

# tan and products of small numbers: a correct device gives the CPU's matrix to rounding.
ATOL = 1e-6
CENTER_2D, CENTER_3D = torch.tensor([[8.0, 8.0], [4.0, 2.0]]), torch.tensor([[8.0, 8.0, 2.0], [4.0, 2.0, 1.0]])
SHEAR = torch.tensor([0.1, -0.2])
CASES = [
    pytest.param(lambda center, shear: get_shear_matrix2d(center, sx=shear), CENTER_2D, id="2d-sy-left-out"),
    pytest.param(lambda center, shear: get_shear_matrix2d(center, sy=shear), CENTER_2D, id="2d-sx-left-out"),
    pytest.param(lambda center, shear: get_shear_matrix3d(center, sxy=shear), CENTER_3D, id="3d-five-left-out"),
]


@pytest.mark.known_bug("kornia-3562", evidence="direct")
@pytest.mark.parametrize(("shear_matrix", "center"), CASES)
def test_shear_matrix_with_a_default_shear_on_device_matches_cpu(device: str, simulation: object | None, shear_matrix, center) -> None:
    target = torch.device(device)
    name = "get_shear_matrix3d" if center.shape[-1] == 3 else "get_shear_matrix2d"
    expected = shear_matrix(center, SHEAR)
    check_matches_cpu(lambda: shear_matrix(center.to(target), SHEAR.to(target)), target, simulation, name, expected, ATOL)
