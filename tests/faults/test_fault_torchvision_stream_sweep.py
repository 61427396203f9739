"""The torchvision stream sweep (suites/torchvision_sweeps/) can fail where it really calls
torchvision: `adjust_hue`'s HSV-to-RGB step (reached by the sweep's ColorJitter) given
torchvision-8587's shape, an event recorded before the device-to-host copy it stands for, so the
host reads the pinned result before the copy is done: a finding naming both accesses. The twin
with the event recorded after the copy is clean."""

from __future__ import annotations

import pytest
import torch
from torchvision.transforms.v2.functional import _color

from fixtures.proxies.meta_proxy import CLEAN, FINDING
from fixtures.proxies.stream_proxy import STREAM_RACE, on_two_streams
from simcuda import simulated_cuda
from suites.torchvision_sweeps.targets import transform_call


def checked_on_the_host(record_before_copy: bool):
    """_hsv_to_rgb whose result the host checks through a pinned copy, as a library validating its
    output would; the event that should say "copied" is recorded before or after the copy."""
    original = _color._hsv_to_rgb

    def hsv_to_rgb(image: torch.Tensor) -> torch.Tensor:
        result = original(image)
        host = torch.empty(result.shape, dtype=result.dtype, pin_memory=True)
        copied = torch.cuda.Event()
        if record_before_copy:
            copied.record()
        host.copy_(result, non_blocking=True)
        if not record_before_copy:
            copied.record()
        copied.synchronize()
        if not bool(host.isfinite().all()):
            raise ValueError("non-finite hue")
        return result

    return hsv_to_rgb


def sweep_color_jitter(monkeypatch: pytest.MonkeyPatch, record_before_copy: bool) -> object:
    monkeypatch.setattr(_color, "_hsv_to_rgb", checked_on_the_host(record_before_copy))
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        return on_two_streams(transform_call("ColorJitter"), torch.device("cuda:1"), simulation.streams, "torchvision")


@pytest.mark.catches("fixtures/proxies/stream_proxy.py::on_two_streams")
def test_fault_an_event_recorded_before_the_copy_it_stands_for(monkeypatch: pytest.MonkeyPatch) -> None:
    result = sweep_color_jitter(monkeypatch, record_before_copy=True)
    assert (result.kind, result.found) == (FINDING, STREAM_RACE), result.detail
    assert "on the host" in result.detail and "aten::copy_" in result.detail and "hsv_to_rgb" in result.detail


def test_the_event_recorded_after_the_copy_is_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    result = sweep_color_jitter(monkeypatch, record_before_copy=False)
    assert result.kind == CLEAN, result.detail
