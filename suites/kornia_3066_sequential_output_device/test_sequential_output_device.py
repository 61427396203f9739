"""kornia-3066, direct: AugmentationSequential given an image and a mask on `device` (two data
keys) must return the augmented image there, equal to the CPU's, whether the sequential was moved
there or left on the CPU. Its symptom is that output left on the CPU; a device mismatch the call
raises instead is another bug's (kornia-4151 on 0.9.0rc1, for the sequential left on the CPU), and
that case cannot tell (Inconclusive): the moved one decides there.

kornia 0.7.4's AugmentationSequential.__call__ kept the image output for drawing as
`self._output_image`, the very list it returns, and replaced the image in it with a detached CPU
copy (`_detach_tensor_to_cpu`): with two or more data keys the caller gets its image back on the
CPU. A one-key call is untouched. On cpu the body is a control; on simcuda:N it runs on the
simulated CUDA device (simulated evidence); on a real GPU (argued, not run here) `.cpu()` moves it
the same way, as the upstream report shows on cuda:0.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from fixtures.proxies.meta_proxy import WRONG_DEVICE_OUTPUT
from suites.device_oracle import check_matches_cpu

AugmentationSequential, RandomHorizontalFlip = library_api(
    "kornia.augmentation", "AugmentationSequential", "RandomHorizontalFlip", first_release="0.6.10"
)

# A flip moves values without arithmetic: a correct device returns the CPU's result exactly.
ATOL = 0.0


@pytest.mark.known_bug("kornia-3066", evidence="direct")
@pytest.mark.parametrize("moved", [False, True], ids=["left-on-cpu", "moved"])
@pytest.mark.parametrize("data_keys", [["input", "mask"], ["input", "mask", "mask"]], ids=["image-mask", "image-two-masks"])
def test_sequential_returns_the_image_on_its_device(device: str, simulation: object | None, data_keys: list[str], moved: bool) -> None:
    target = torch.device(device)
    image, mask = torch.rand(2, 3, 8, 12), (torch.rand(2, 1, 8, 12) > 0.5).float()
    masks = [mask] * (len(data_keys) - 1)
    expected = AugmentationSequential(RandomHorizontalFlip(p=1.0))(image, *masks, data_keys=data_keys)[0]
    sequential = AugmentationSequential(RandomHorizontalFlip(p=1.0))
    if moved:
        sequential = sequential.to(target)
    where = "moved" if moved else "left on the CPU"
    check_matches_cpu(
        lambda: sequential(image.to(target), *(m.to(target) for m in masks), data_keys=data_keys)[0],
        target, simulation, f"AugmentationSequential ({', '.join(data_keys)}; {where}) image output", expected, ATOL,
        symptoms=(WRONG_DEVICE_OUTPUT,),  # a device mismatch raised is another bug's (kornia-4151 on 0.9.0rc1)
    )
