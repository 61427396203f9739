"""kornia-4151, direct: an augmentation left on the CPU (its parameters drawn there, as kornia
documents) and called on an input on `device` must run there and give the CPU result under the
same parameters.

0.9.0rc1 blends the transformed and untouched samples with `torch.where(to_apply, ...)`, where
`to_apply` comes from the parameters' `batch_prob`, drawn on the CPU: PyTorch's device mismatch on
a CUDA input, at each of the blend sites a case reaches (the images, a mask, the 2D and the 3D
transformation matrices). On cpu the body is a control; on simcuda:N it runs on the simulated CUDA
device (simulated evidence); on a real GPU (argued, not run here) the same mismatch is raised, as
the upstream report shows on CUDA and MPS.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from suites.device_oracle import check_matches_cpu

AugmentationSequential, RandomAffine, RandomHorizontalFlip, RandomHorizontalFlip3D = library_api(
    "kornia.augmentation", "AugmentationSequential", "RandomAffine", "RandomHorizontalFlip", "RandomHorizontalFlip3D",
    first_release="0.6.10",
)

# A flip moves values; an affine warp of a random image differs from the CPU by interpolation rounding.
ATOL = 1e-5
# A batch of four at p=0.5 under a fixed seed: some samples transformed, some not, so the blend
# selects between both branches (a batch all one way would still run it, but compare less).
SHAPES = {"2d": (4, 3, 8, 12), "3d": (4, 3, 2, 8, 12)}
CASES = [
    pytest.param(lambda: RandomHorizontalFlip(p=0.5), "2d", id="RandomHorizontalFlip-images"),
    pytest.param(lambda: RandomAffine(degrees=10.0, p=0.5), "2d", id="RandomAffine-2d-matrix"),
    pytest.param(lambda: RandomHorizontalFlip3D(p=0.5), "3d", id="RandomHorizontalFlip3D-3d-matrix"),
]


@pytest.mark.known_bug("kornia-4151", evidence="direct")
@pytest.mark.usefixtures("full_fp32_precision")
@pytest.mark.parametrize(("make", "shape"), CASES)
def test_augmentation_left_on_cpu_blends_on_device_and_matches_cpu(device: str, simulation: object | None, make, shape: str) -> None:
    target = torch.device(device)
    image = torch.rand(*SHAPES[shape], generator=torch.Generator().manual_seed(0))
    augmentation = make()
    name = type(augmentation).__name__
    params = augmentation.forward_parameters(image.shape)
    expected = augmentation(image.clone(), params=params)
    check_matches_cpu(lambda: augmentation(image.to(target), params=params), target, simulation, f"{name} (not moved)", expected, ATOL)


@pytest.mark.known_bug("kornia-4151", evidence="direct")
def test_sequential_with_a_mask_blends_on_device_and_matches_cpu(device: str, simulation: object | None) -> None:
    """The mask's blend (`transform_masks`) runs even at p=1.0, where the images' is skipped."""
    target = torch.device(device)
    image, mask = torch.rand(2, 3, 8, 12), (torch.rand(2, 1, 8, 12) > 0.5).float()
    expected = AugmentationSequential(RandomHorizontalFlip(p=1.0))(image, mask, data_keys=["input", "mask"])[1]
    sequential = AugmentationSequential(RandomHorizontalFlip(p=1.0))
    check_matches_cpu(
        lambda: sequential(image.to(target), mask.to(target), data_keys=["input", "mask"])[1],
        target, simulation, "AugmentationSequential (input, mask) mask output", expected, 0.0,
    )
