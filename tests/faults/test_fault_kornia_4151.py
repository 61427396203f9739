"""kornia-4151's oracle flags kornia PR 4164 undone: inside `simulated_cuda()`, as a simcuda:1 body
runs, installed kornia's probability blends leave their gate (`to_apply`, from the parameters'
`batch_prob`, drawn on the CPU) where it is and hand it to `torch.where` with samples on the device,
as 0.9.0rc1 did. The unplanted library stays clean."""

from __future__ import annotations

import importlib

import pytest
import torch

from fixtures.known_bugs.outcomes import BugObserved
from suites.kornia_4151_probability_blend.test_probability_blend_device import CASES
from suites.kornia_4151_probability_blend.test_probability_blend_device import (
    test_augmentation_left_on_cpu_blends_on_device_and_matches_cpu as blend_body,
)
from suites.kornia_4151_probability_blend.test_probability_blend_device import (
    test_sequential_with_a_mask_blends_on_device_and_matches_cpu as mask_body,
)
from tests.helpers.simulated_cuda1 import run_on_simulated_cuda1

SUITE = "suites/kornia_4151_probability_blend/test_probability_blend_device.py"
# Each case of the suite, its arguments after the device: (make, shape) of the blend test, or none
# for the mask test.
BODIES = [*(pytest.param(case.values, id=case.id) for case in CASES), pytest.param((), id="AugmentationSequential-mask")]


def blend_gates_left_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """0.9.0rc1's blends: PR 4164 moved each boolean gate to the samples' device (kornia's
    `_to_device_nonblocking`, at the blend sites of these three modules); undone, it stays put."""
    for name in ("kornia.augmentation.base", "kornia.augmentation._2d.base", "kornia.augmentation._3d.base"):
        module = importlib.import_module(name)  # by name: `_3d.base` as an attribute is another module
        move = module._to_device_nonblocking

        def kept_where_it_is(tensor: torch.Tensor, device: torch.device, dtype: torch.dtype | None = None, move=move) -> torch.Tensor:
            return tensor if tensor.dtype == torch.bool else move(tensor, device, dtype)

        monkeypatch.setattr(module, "_to_device_nonblocking", kept_where_it_is)


@pytest.mark.catches(
    f"{SUITE}::test_augmentation_left_on_cpu_blends_on_device_and_matches_cpu",
    f"{SUITE}::test_sequential_with_a_mask_blends_on_device_and_matches_cpu",
    "suites/device_oracle.py::check_matches_cpu",
)
@pytest.mark.parametrize("arguments", BODIES)
def test_fault_blend_gate_left_on_the_cpu(monkeypatch: pytest.MonkeyPatch, arguments: tuple) -> None:
    blend_gates_left_on_the_cpu(monkeypatch)
    with pytest.raises(BugObserved, match=r"\((not moved|input, mask)\).* on cuda:1: .*Expected all tensors to be on the same device"):
        run_on_simulated_cuda1(blend_body if arguments else mask_body, *arguments)


@pytest.mark.parametrize("arguments", BODIES)
def test_the_installed_kornia_blending_on_the_device_is_clean(arguments: tuple) -> None:
    run_on_simulated_cuda1(blend_body if arguments else mask_body, *arguments)
