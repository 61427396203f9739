"""The stream sweeps' oracle (fixtures/proxies/stream_proxy.py, used by suites/*_sweeps/test_stream_sweep.py) can fail: a callable
shaped like kornia 0.9.0's per-device JPEG-table cache without its synchronize (the tables filled
on one stream, read from another without waiting) is a finding naming both accesses; the same
cache with kornia's `current_stream().synchronize()` after filling it, and a call with no shared
memory, are clean."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from fixtures.proxies.meta_proxy import CLEAN, FINDING, INCONCLUSIVE
from fixtures.proxies.stream_proxy import NO_RUN, STREAM_RACE, on_two_streams
from simcuda import simulated_cuda


class CachingCall:
    """A SweepCall-shaped callable whose library keeps a per-device table."""

    def __init__(self, synchronize_after_filling: bool) -> None:
        self.synchronize_after_filling = synchronize_after_filling
        self.tables: dict[torch.device, torch.Tensor] = {}

    def call(self, device: torch.device) -> torch.Tensor:
        if device not in self.tables:
            self.tables[device] = torch.arange(64.0, device=device).reshape(8, 8) / 64
            if self.synchronize_after_filling:
                torch.cuda.current_stream(device).synchronize()
        image = torch.rand(2, 8, 8, device=device)
        return image * self.tables[device]


class PlainCall:
    def call(self, device: torch.device) -> torch.Tensor:
        return torch.rand(2, 8, 8, device=device).flip(-1)


def stream_sweep_result(user: object) -> object:
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        return on_two_streams(user.call, torch.device("cuda:1"), simulation.streams)


@pytest.mark.catches("fixtures/proxies/stream_proxy.py::on_two_streams")
def test_fault_a_cache_filled_on_one_stream_read_from_another() -> None:
    result = stream_sweep_result(CachingCall(synchronize_after_filling=False))
    assert (result.kind, result.found) == (FINDING, STREAM_RACE), result.detail
    assert "aten::mul" in result.detail and "side stream" in result.detail


CLEAN_TWINS: dict[str, Callable[[], object]] = {
    "the same cache, synchronized after filling (kornia 0.9.0)": lambda: CachingCall(synchronize_after_filling=True),
    "no memory shared between calls": PlainCall,
}


@pytest.mark.parametrize("make", CLEAN_TWINS.values(), ids=CLEAN_TWINS.keys())
def test_the_ordered_twins_are_clean(make: Callable[[], object]) -> None:
    result = stream_sweep_result(make())
    assert result.kind == CLEAN, result.detail


class MismatchedCall:
    """A call that raises PyTorch's device mismatch on the device (kornia 0.9.0rc1's RandomShear)."""

    def call(self, device: torch.device) -> torch.Tensor:
        return torch.rand(2, 8, 8, device=device) + torch.ones(8)


class CallLeavingItsOutputOnTheCpu:
    """A call that runs and returns on the CPU: a device sweep's finding, whose ordering is still judged."""

    def call(self, device: torch.device) -> torch.Tensor:
        return torch.rand(2, 8, 8, device=device).flip(-1).cpu()


def test_a_call_that_raises_on_the_device_is_inconclusive_never_clean() -> None:
    """Nothing ran to order: before, a device mismatch read as a clean row (0.9.0rc1's RandomShear)."""
    result = stream_sweep_result(MismatchedCall())
    assert result.kind == INCONCLUSIVE and result.detail.startswith(f"{NO_RUN}: RuntimeError: Expected all tensors"), result.detail
    assert stream_sweep_result(CallLeavingItsOutputOnTheCpu()).kind == CLEAN
