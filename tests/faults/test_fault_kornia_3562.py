"""kornia-3562's oracle flags kornia PR 3652 undone: inside `simulated_cuda()`, as a simcuda:1 body
runs, installed kornia's get_shear_matrix2d / get_shear_matrix3d make each shear left out on the
CPU (`torch.tensor([0.0]).repeat(batch)`), as 0.8.2 and older did. The unplanted library stays
clean."""

from __future__ import annotations

import pytest
import torch
from kornia.geometry.transform import imgwarp

from fixtures.known_bugs.outcomes import BugObserved
from suites.kornia_3562_shear_matrix_defaults.test_shear_matrix_device import CASES
from suites.kornia_3562_shear_matrix_defaults.test_shear_matrix_device import (
    test_shear_matrix_with_a_default_shear_on_device_matches_cpu as suite_body,
)
from tests.helpers.simulated_cuda1 import run_on_simulated_cuda1

SHEARS = {"get_shear_matrix2d": ("sx", "sy"), "get_shear_matrix3d": ("sxy", "sxz", "syx", "syz", "szx", "szy")}


def _defaults_on_the_cpu(name: str):
    """The fixed function, handed the CPU zeros 0.8.2 made for every shear left out."""
    fixed = getattr(imgwarp, name)

    def before_the_fix(center: torch.Tensor, **shears: torch.Tensor | None) -> torch.Tensor:
        made = {shear: torch.tensor([0.0]).repeat(center.size(0)) for shear in SHEARS[name] if shears.get(shear) is None}
        return fixed(center, **{**shears, **made})

    return before_the_fix


@pytest.mark.catches(
    "suites/kornia_3562_shear_matrix_defaults/test_shear_matrix_device.py::test_shear_matrix_with_a_default_shear_on_device_matches_cpu",
    "suites/device_oracle.py::check_matches_cpu",
)
@pytest.mark.parametrize(("shear_matrix", "center"), [case.values for case in CASES], ids=[case.id for case in CASES])
def test_fault_a_shear_left_out_made_on_the_cpu(monkeypatch, shear_matrix, center) -> None:
    suite = "suites.kornia_3562_shear_matrix_defaults.test_shear_matrix_device"
    for name in SHEARS:
        monkeypatch.setattr(f"{suite}.{name}", _defaults_on_the_cpu(name))
    with pytest.raises(BugObserved, match=r"get_shear_matrix[23]d on cuda:1: .*Expected all tensors to be on the same device"):
        run_on_simulated_cuda1(suite_body, shear_matrix, center)


@pytest.mark.parametrize(("shear_matrix", "center"), [case.values for case in CASES], ids=[case.id for case in CASES])
def test_the_installed_kornia_making_the_defaults_on_the_device_is_clean(shear_matrix, center) -> None:
    run_on_simulated_cuda1(suite_body, shear_matrix, center)
