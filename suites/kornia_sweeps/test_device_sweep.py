"""Device sweep (the kornia-2837 class): public kornia functions and augmentations on one device.

On the `cpu` parametrization the inputs go to `meta` (the CPU proxy); on `cuda:N` to that GPU
(argued, not run here). The classifier in fixtures/meta_proxy.py sorts each outcome. A failure it
cannot place is checked against the same call on CPU inputs: failing there too means the sweep's
arguments are wrong (a harness error); passing there means the target device could not run it --
inconclusive on meta, a finding on a GPU.
"""

from __future__ import annotations

import kornia
import pytest
import torch
from packaging.version import Version

from fixtures.meta_proxy import CLEAN, ERROR, FINDING, INCONCLUSIVE, ProxyResult, classify_call
from suites.kornia_sweeps.targets import SweepCall, device_targets, function_targets

TARGETS = {target.name: target for target in device_targets()}


def sweep_device(device: str) -> torch.device:
    return torch.device("meta" if device == "cpu" else device)


def device_result(target: SweepCall, device: torch.device) -> ProxyResult:
    result = classify_call(lambda: target.call(device), device)
    if result.kind != ERROR:
        return result
    on_cpu = classify_call(lambda: target.call(torch.device("cpu")), "cpu")
    assert on_cpu.kind == CLEAN, f"harness: the sweep's arguments for {target.name} fail on CPU: {on_cpu.detail}"
    kind = INCONCLUSIVE if device.type == "meta" else FINDING
    return ProxyResult(kind, f"fails on {device}, runs on cpu: {result.detail}")


@pytest.mark.parametrize("name", list(TARGETS))
def test_callable_stays_on_device(device: str, name: str, sweep_record) -> None:
    target_device = sweep_device(device)
    sweep_record("device", name, str(target_device), device_result(TARGETS[name], target_device))


def test_sweep_names_what_it_does_not_cover(record_property) -> None:
    """Public functions without an arguments entry are listed, so coverage gaps are visible, and
    the table must not name functions that no longer exist (it would silently sweep less)."""
    from suites.kornia_sweeps.targets import FUNCTION_CALLS, FUNCTION_SWEPT_MODULES, TABLE_WRITTEN_FOR

    swept, unswept = function_targets()
    record_property("unswept_functions", unswept)
    if Version(kornia.__version__) < Version(TABLE_WRITTEN_FOR):
        pytest.skip(f"the arguments table is written for kornia {TABLE_WRITTEN_FOR}; {kornia.__version__} lacks some")
    exported = {name for module in FUNCTION_SWEPT_MODULES for name in dir(module)}
    assert set(FUNCTION_CALLS) <= exported, f"stale sweep entries: {sorted(set(FUNCTION_CALLS) - exported)}"
    assert len(swept) == len(FUNCTION_CALLS)
