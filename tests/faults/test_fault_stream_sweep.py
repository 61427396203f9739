"""The stream sweeps' oracle (fixtures/proxies/stream_proxy.py, used by suites/*_sweeps/test_stream_sweep.py) can fail: a callable
shaped like kornia 0.9.0's per-device JPEG-table cache without its synchronize (the tables filled
on one stream, read from another without waiting) is a finding naming both accesses; the same
cache with kornia's `current_stream().synchronize()` after filling it, and a call with no shared
memory, are clean."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

import pytest
import torch

from fixtures.proxies.meta_proxy import CLEAN, FINDING, INCONCLUSIVE
from fixtures.proxies.stream_proxy import NO_RUN, STREAM_RACE, _names_a_device, on_two_streams
from simcuda import simulated_cuda

PACKAGE = "a_library_under_sweep"  # the package whose module-level device caches the sweep empties


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
        return on_two_streams(user.call, torch.device("cuda:1"), simulation.streams, PACKAGE)


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


class UnimplementedCall:
    """A call that raises NotImplementedError on the device (kornia 0.8.3's RandomErasing: a kernel
    missing for its dtype), which the device proxy sorts as inconclusive."""

    def call(self, device: torch.device) -> torch.Tensor:
        raise NotImplementedError('"check_uniform_bounds" not implemented for \'Long\'')


@pytest.mark.parametrize(
    ("user", "said"),
    [(MismatchedCall(), "RuntimeError: Expected all tensors"), (UnimplementedCall(), "NotImplementedError: ")],
    ids=["mismatch", "unimplemented"],
)
def test_a_call_that_raises_on_the_device_is_inconclusive_never_clean(user: object, said: str) -> None:
    """Nothing ran to order: before, such a call read as a clean row (0.9.0rc1's RandomShear, 0.8.3's RandomErasing)."""
    result = stream_sweep_result(user)
    assert result.kind == INCONCLUSIVE and result.detail.startswith(f"{NO_RUN}: {said}"), result.detail


def test_a_call_that_returns_elsewhere_is_still_judged_for_its_ordering() -> None:
    assert stream_sweep_result(CallLeavingItsOutputOnTheCpu()).kind == CLEAN


def module_cache_call(monkeypatch: pytest.MonkeyPatch) -> tuple[Callable[[torch.device], torch.Tensor], dict]:
    """kornia 0.8.3's shape: a module-level per-device table (`_DCT8_CACHE`) filled at first use,
    with no synchronize; the module registered as the package's."""
    module = types.ModuleType(f"{PACKAGE}.jpeg")
    module.TABLES = {}

    def call(device: torch.device) -> torch.Tensor:
        if device not in module.TABLES:
            module.TABLES[device] = torch.arange(64.0, device=device).reshape(8, 8) / 64
        return torch.rand(2, 8, 8, device=device) * module.TABLES[device]

    monkeypatch.setitem(sys.modules, module.__name__, module)
    return call, module.TABLES


@pytest.mark.catches("fixtures/proxies/stream_proxy.py::on_two_streams")
def test_fault_a_module_cache_an_earlier_test_filled_is_still_raced(monkeypatch: pytest.MonkeyPatch) -> None:
    """An earlier test filled the cache on the default stream (ordered before both side streams):
    the sweep empties it for its calls, as in a fresh process, so the race of its first fill shows
    whatever ran before (before, kornia 0.8.3's DCT cache race showed only where no JPEG test had);
    the cache is put back after."""
    call, tables = module_cache_call(monkeypatch)
    sys.modules[f"{PACKAGE}.jpeg"].LUT = lut = {"gamma": None}  # a table keyed otherwise: read, never refilled, so it stays
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        warm = call(torch.device("cuda:1"))  # an earlier test's use
        lut["gamma"] = torch.ones(8, device="cuda:1")
        filled = dict(tables)
        read = []
        result = on_two_streams(lambda device: read.append(lut["gamma"]) or call(device), torch.device("cuda:1"), simulation.streams, PACKAGE)
    assert (result.kind, result.found) == (FINDING, STREAM_RACE), result.detail
    assert read and all(table is lut["gamma"] for table in read)
    assert tables == filled and warm.shape == (2, 8, 8)


@pytest.mark.parametrize(
    ("key", "names"),
    [
        (torch.device("cuda", 1), True),
        ("cuda:1", True),
        ((torch.float32, torch.device("cuda", 0)), True),  # kornia's (dtype, device)
        ((torch.float32, "cuda"), True),
        (torch.device("cpu"), False),
        ((torch.float32, torch.device("cpu")), False),
        ("bilinear", False),
        (("cuda",), True),
        ((), False),
        (1, False),
    ],
)
def test_a_cache_key_names_a_device_alone_or_in_a_tuple(key: object, names: bool) -> None:
    assert _names_a_device(key) is names


def test_a_module_cache_bound_after_an_earlier_call_is_emptied_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library that binds its cache at first use (`_CACHE = None`, then a dict): the next call
    finds it emptied all the same, so its first fill is raced there too."""
    call, tables = module_cache_call(monkeypatch)
    module = sys.modules[f"{PACKAGE}.jpeg"]
    module.TABLES = None
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        assert on_two_streams(lambda device: None, torch.device("cuda:1"), simulation.streams, PACKAGE).kind == CLEAN
        module.TABLES = tables  # bound since the last call, and filled by an earlier test
        call(torch.device("cuda:1"))
        result = on_two_streams(call, torch.device("cuda:1"), simulation.streams, PACKAGE)
    assert (result.kind, result.found) == (FINDING, STREAM_RACE), result.detail


def test_the_kornia_stream_sweep_calls_every_callable_the_device_sweep_simulates() -> None:
    """Functions included (they have no `way`): before, only the augmentations moved to the device ran."""
    from suites.kornia_sweeps.test_device_sweep import SIMULATED_CALLS
    from suites.kornia_sweeps.test_stream_sweep import CALLS, GROUPS

    assert set(CALLS) == set(SIMULATED_CALLS)
    assert sorted(name for names in GROUPS.values() for name in names) == sorted(CALLS)
    assert {"kornia.augmentation", "kornia.filters", "kornia.enhance", "kornia.geometry.transform"} <= set(GROUPS)


def test_a_callable_refusing_the_arguments_table_is_inconclusive_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a release older than the table one class's signature refuses its arguments (kornia 0.8.2's
    RandomCutMixV2): that callable is inconclusive, naming why, and its module's others still run."""
    from types import SimpleNamespace

    from fixtures.sweeps.tables import skip_if_older_than_table
    from suites.kornia_sweeps import test_stream_sweep

    def refused(device: torch.device) -> object:
        skip_if_older_than_table("kornia", "0.6.10", "0.9.0", "RandomCutMixV2.__init__() got an unexpected keyword argument")

    monkeypatch.setitem(test_stream_sweep.CALLS, "kornia.augmentation.Refused", SimpleNamespace(call=refused))
    monkeypatch.setitem(test_stream_sweep.CALLS, "kornia.augmentation.Plain", SimpleNamespace(call=PlainCall().call))
    with simulated_cuda(2) as simulation:
        simulation.set_device(1)
        refused_result, plain_result = (
            test_stream_sweep.stream_result(f"kornia.augmentation.{name}", torch.device("cuda:1"), simulation) for name in ("Refused", "Plain")
        )
    assert refused_result.kind == INCONCLUSIVE and "kornia 0.6.10: RandomCutMixV2" in refused_result.detail, refused_result.detail
    assert plain_result.kind == CLEAN


def test_a_race_is_placed_at_both_callers() -> None:
    """The earlier access's caller in the package, then the later one's; one outside it is named so."""
    from types import SimpleNamespace

    from fixtures.proxies.stream_proxy import race_site
    from tests.conftest import REPO

    fill = SimpleNamespace(where=(f"{REPO}/fixtures/proxies/stream_proxy.py", 60, "fill"))
    read = SimpleNamespace(where=(f"{REPO}/tests/faults/test_fault_stream_sweep.py", 30, "call"))
    assert race_site(SimpleNamespace(previous=fill, current=read), "fixtures") == "fixtures/proxies/stream_proxy.py:fill -> (outside fixtures)"
