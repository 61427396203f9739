"""kornia-3028's oracle flags kornia PR 3457 undone: inside `simulated_cuda()`, as a simcuda:1 body
runs, installed kornia's RandomGaussianIllumination adds the illumination pattern to the image
without moving it (what 0.7.3 to 0.8.2 did), so the CPU pattern meets the image on cuda:1. The
unplanted library, in a fresh simulation, stays clean."""

from __future__ import annotations

import pytest
from kornia.augmentation._2d.intensity import gaussian_illumination

from fixtures.known_bugs.outcomes import BugObserved
from suites.kornia_3028_gaussian_illumination.test_gaussian_illumination_device import test_unmoved_illumination_on_device_matches_cpu as suite_body
from tests.helpers.simulated_cuda1 import run_on_simulated_cuda1

SHAPE = (2, 3, 16, 16)


@pytest.mark.catches(
    "suites/kornia_3028_gaussian_illumination/test_gaussian_illumination_device.py::test_unmoved_illumination_on_device_matches_cpu",
    "suites/device_oracle.py::check_matches_cpu",
)
def test_fault_illumination_pattern_added_without_moving_it(monkeypatch) -> None:
    monkeypatch.setattr(gaussian_illumination, "_to_device_nonblocking", lambda gradient, device, dtype: gradient.to(dtype=dtype))
    with pytest.raises(BugObserved, match=r"RandomGaussianIllumination \(not moved\) on cuda:1: .*Expected all tensors to be on the same device"):
        run_on_simulated_cuda1(suite_body, SHAPE)


def test_the_installed_kornia_moving_the_pattern_is_clean() -> None:
    run_on_simulated_cuda1(suite_body, SHAPE)
