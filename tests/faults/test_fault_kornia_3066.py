"""kornia-3066's oracle flags kornia PR 3084 undone: inside `simulated_cuda()`, as a simcuda:1 body
runs, installed kornia's AugmentationSequential replaces the image in the list it returns with a
detached CPU copy whenever it is given two or more data keys, as 0.7.4 did. The unplanted library
stays clean."""

from __future__ import annotations

import pytest
from kornia.augmentation import AugmentationSequential

from fixtures.known_bugs.outcomes import BugObserved, Inconclusive
from suites.kornia_3066_sequential_output_device.test_sequential_output_device import (
    test_sequential_returns_the_image_on_its_device as suite_body,
)
from tests.faults.test_fault_kornia_4151 import blend_gates_left_on_the_cpu
from tests.helpers.simulated_cuda1 import run_on_simulated_cuda1

KEYS = [pytest.param(["input", "mask"], id="image-mask"), pytest.param(["input", "mask", "mask"], id="image-two-masks")]
MOVED = [pytest.param(False, id="left-on-cpu"), pytest.param(True, id="moved")]


def _image_detached_to_the_cpu(call):
    """0.7.4's __call__: the returned list's image swapped for its detached CPU copy when there are several keys."""

    def called(self, *inputs, **kwargs):
        outputs = call(self, *inputs, **kwargs)
        if len(kwargs.get("data_keys") or self.data_keys or ()) > 1:
            outputs[0] = outputs[0].detach().cpu()
        return outputs

    return called


@pytest.mark.catches(
    "suites/kornia_3066_sequential_output_device/test_sequential_output_device.py::test_sequential_returns_the_image_on_its_device",
    "suites/device_oracle.py::check_matches_cpu",
)
@pytest.mark.parametrize("moved", MOVED)
@pytest.mark.parametrize("data_keys", KEYS)
def test_fault_image_output_detached_to_the_cpu(monkeypatch, data_keys: list[str], moved: bool) -> None:
    monkeypatch.setattr(AugmentationSequential, "__call__", _image_detached_to_the_cpu(AugmentationSequential.__call__))
    with pytest.raises(BugObserved, match=r"AugmentationSequential \(input, mask.*\) image output on cuda:1: output tensor #0 is on cpu"):
        run_on_simulated_cuda1(suite_body, data_keys, moved)


@pytest.mark.parametrize("moved", MOVED)
@pytest.mark.parametrize("data_keys", KEYS)
def test_the_installed_kornia_returning_the_image_on_its_device_is_clean(data_keys: list[str], moved: bool) -> None:
    run_on_simulated_cuda1(suite_body, data_keys, moved)


@pytest.mark.parametrize("also_detached", [False, True], ids=["4151-alone", "4151-hiding-3066"])
@pytest.mark.parametrize("data_keys", KEYS)
def test_a_device_mismatch_raised_is_not_its_symptom(monkeypatch, data_keys: list[str], also_detached: bool) -> None:
    """kornia 0.9.0rc1 raises kornia-4151's device mismatch in the mask's blend before any output:
    no sighting of 3066 (before, the scan read 0.9.0rc1 `regressed`), and the case cannot tell
    whether the image would have come back on the CPU."""
    blend_gates_left_on_the_cpu(monkeypatch)
    if also_detached:
        monkeypatch.setattr(AugmentationSequential, "__call__", _image_detached_to_the_cpu(AugmentationSequential.__call__))
    with pytest.raises(Inconclusive, match=r"left on the CPU\) image output on cuda:1: RuntimeError: Expected all .*: not this bug's symptom"):
        run_on_simulated_cuda1(suite_body, data_keys, False)


@pytest.mark.parametrize("data_keys", KEYS)
def test_the_moved_sequential_decides_where_4151_hides_it(monkeypatch, data_keys: list[str]) -> None:
    """kornia-4151's gate follows a moved module to the device: on 0.9.0rc1 the moved case runs,
    so 3066 is decided there (a sighting with 3066 planted beside 4151)."""
    blend_gates_left_on_the_cpu(monkeypatch)
    monkeypatch.setattr(AugmentationSequential, "__call__", _image_detached_to_the_cpu(AugmentationSequential.__call__))
    with pytest.raises(BugObserved, match=r"moved\) image output on cuda:1: output tensor #0 is on cpu"):
        run_on_simulated_cuda1(suite_body, data_keys, True)
