"""kornia-2867's oracle flags kornia PR 3149 undone: inside `simulated_cuda()`, as a simcuda:1 body
runs, installed kornia's `jpeg_codec_differentiable` leaves the one-dimensional `jpeg_quality` where
RandomJPEG's generator drew it (the CPU) while the quantization tables move to the image's device,
as 0.7.2 to 0.8.1 did. The unplanted library, in a fresh simulation, stays clean both ways."""

from __future__ import annotations

import pytest
import torch
from kornia.enhance import jpeg

from fixtures.known_bugs.outcomes import BugObserved
from suites.kornia_2867_random_jpeg.test_random_jpeg_device import test_random_jpeg_on_device_matches_cpu as suite_body
from tests.helpers.simulated_cuda1 import run_on_simulated_cuda1


@pytest.mark.catches(
    "suites/kornia_2867_random_jpeg/test_random_jpeg_device.py::test_random_jpeg_on_device_matches_cpu",
    "suites/device_oracle.py::check_matches_cpu",
)
@pytest.mark.parametrize("moved", [True, False], ids=["module-moved", "module-not-moved"])
def test_fault_jpeg_quality_left_where_the_generator_drew_it(monkeypatch, moved: bool) -> None:
    move = jpeg._to_device_nonblocking

    def quality_not_moved(tensor: torch.Tensor, device, dtype) -> torch.Tensor:
        # The quality is (B,) or (1,); the quantization tables are 8x8 (or Bx8x8) and still move.
        return tensor.to(dtype=dtype) if tensor.dim() == 1 else move(tensor, device, dtype)

    monkeypatch.setattr(jpeg, "_to_device_nonblocking", quality_not_moved)
    with pytest.raises(BugObserved, match=r"RandomJPEG \(module (not )?moved\) on cuda:1: .*Expected all tensors to be on the same device"):
        run_on_simulated_cuda1(suite_body, moved)


@pytest.mark.parametrize("moved", [True, False], ids=["module-moved", "module-not-moved"])
def test_the_installed_kornia_moving_the_quality_is_clean(moved: bool) -> None:
    run_on_simulated_cuda1(suite_body, moved)
