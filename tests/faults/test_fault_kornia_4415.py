"""kornia-4415's oracle flags kornia PR 4523 undone: inside `simulated_cuda()`, as a simcuda:1 body
runs, installed kornia's shear and affine generators build the x shear range on the CPU (a
`_range_bound` call without the device) and the zero y range on the requested device, as 0.7.3 to
0.8.2 did, so `.to("cuda:1")` stacks the two. The unplanted library stays clean."""

from __future__ import annotations

import pytest
import torch
from kornia.augmentation.random_generator._2d import affine, shear
from kornia.augmentation.utils.param_validation import _range_bound

from fixtures.known_bugs.outcomes import BugObserved
from suites.kornia_4415_shear_range.test_shear_range_device import CASES
from suites.kornia_4415_shear_range.test_shear_range_device import test_sheared_augmentation_moved_to_device_matches_cpu as suite_body
from tests.helpers.simulated_cuda1 import run_on_simulated_cuda1

MAKERS = [pytest.param(case.values[0], id=case.id) for case in CASES]


def _shear_bound_before_the_fix(value, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    value = torch.as_tensor(value, device=device, dtype=dtype)
    x_range = _range_bound(value if value.dim() == 0 else value[:2], "shear-x", 0, (-360, 360))  # no device: the CPU
    return torch.stack([x_range, torch.zeros(2, device=device, dtype=dtype)])


@pytest.mark.catches(
    "suites/kornia_4415_shear_range/test_shear_range_device.py::test_sheared_augmentation_moved_to_device_matches_cpu",
    "suites/device_oracle.py::check_matches_cpu",
)
@pytest.mark.parametrize("make", MAKERS)
def test_fault_x_shear_range_built_on_the_cpu(monkeypatch, make) -> None:
    for generator in (shear, affine):
        monkeypatch.setattr(generator, "_shear_bound", _shear_bound_before_the_fix)
    with pytest.raises(BugObserved, match=r"Random(Shear|Affine) \(moved\) on cuda:1: .*Expected all tensors to be on the same device"):
        run_on_simulated_cuda1(suite_body, make)


@pytest.mark.parametrize("make", MAKERS)
def test_the_installed_kornia_building_both_ranges_on_the_device_is_clean(make) -> None:
    run_on_simulated_cuda1(suite_body, make)
