"""kornia-4536's oracle flags kornia PR 4546 undone: inside `simulated_cuda()`, as a simcuda:1 body
runs, installed kornia's linear illumination generators draw their sign where `.to()` put the
samplers (cuda:1) and multiply it with a gain factor placed by the constructor's tuples (the CPU),
as 0.8.2 and 0.8.3 did. The unplanted library stays clean."""

from __future__ import annotations

import pytest
import torch
from kornia.augmentation.random_generator._2d import linear_illumination
from kornia.augmentation.random_generator._2d.linear_illumination import LinearCornerIlluminationGenerator, LinearIlluminationGenerator

from fixtures.known_bugs.outcomes import BugObserved
from suites.kornia_4536_linear_illumination.test_linear_illumination_device import CASES
from suites.kornia_4536_linear_illumination.test_linear_illumination_device import (
    test_moved_illumination_draws_on_device_and_matches_cpu as suite_body,
)
from tests.helpers.simulated_cuda1 import run_on_simulated_cuda1

MAKERS = [pytest.param(case.values[0], id=case.id) for case in CASES]


def _placed_as_before_the_fix(forward):
    """The generator's forward as 0.8.2 placed it: the sign sampled on the samplers' device and
    left there, the gain factor on the CPU."""

    def drawn(self, batch_shape: tuple[int, ...], same_on_batch: bool = False) -> dict[str, torch.Tensor]:
        pattern = forward(self, batch_shape, same_on_batch)["gradient"]
        shape = (batch_shape[0], 1, 1, 1)
        sign = torch.where(linear_illumination._adapted_rsampling(shape, self.sign_sampler, same_on_batch) >= 0.0, 1.0, -1.0)
        gain_factor = torch.ones(shape)  # `.to(_device)`, _device read from the constructor's tuples: the CPU
        return {"gradient": sign * gain_factor * pattern.abs()}

    return drawn


@pytest.mark.catches(
    "suites/kornia_4536_linear_illumination/test_linear_illumination_device.py::test_moved_illumination_draws_on_device_and_matches_cpu",
    "suites/device_oracle.py::check_runs_on",
)
@pytest.mark.parametrize("make", MAKERS)
def test_fault_gain_factor_placed_by_the_constructor_tuples(monkeypatch, make) -> None:
    for generator in (LinearIlluminationGenerator, LinearCornerIlluminationGenerator):
        monkeypatch.setattr(generator, "forward", _placed_as_before_the_fix(generator.forward))
    with pytest.raises(BugObserved, match=r"RandomLinear(Corner)?Illumination \(moved\) on cuda:1: .*Expected all tensors to be on the same device"):
        run_on_simulated_cuda1(suite_body, make)


@pytest.mark.parametrize("make", MAKERS)
def test_the_installed_kornia_drawing_on_the_device_is_clean(make) -> None:
    run_on_simulated_cuda1(suite_body, make)
