"""Device sweep (the kornia-2837 class): public kornia functions and augmentations on one device.

On the `cpu` parametrization the inputs go to `meta` (the CPU proxy), unless the session sweeps
the same callable on the simulated device (a skip saying so: simulated evidence outranks a proxy);
on `cuda:N` to that GPU (argued, not run here). The classifier in fixtures/proxies/meta_proxy.py sorts each outcome. A failure it
cannot place is checked against the same call on CPU inputs: failing there too means the sweep's
arguments are wrong (a harness error); passing there means the target device could not run it --
inconclusive on meta, a finding on a GPU.

On the simulated device (simcuda:1, not the default device, so "made on the default GPU" shows)
every augmentation runs twice at p=1.0, moved with `.to()` and left on the CPU with its input on
the device, and, where each element has its own coin, once more left on the CPU at p=0.5 with a
coin that transforms some elements of the batch and skips the others (the probability blend,
kornia-4151's site), and, where kornia takes a mask, twice more at p=1.0 with an image and its mask
through AugmentationSequential, moved and not (kornia's mask paths); every output is compared with the CPU run under the same seed: the
simulation computes on the CPU and draws from the CPU generator, so the values must agree.
Findings: a device error, an output on another device, an allocation on a device the call never
asked for, different values. A public function with no arguments in targets.py is named by
test_every_public_function_has_sweep_arguments (a skip, and an `unswept` row).
"""

from __future__ import annotations

import pytest
import torch

from fixtures.determinism.torch_state import seed_torch
from fixtures.proxies.meta_proxy import (
    CLEAN,
    DEVICE_ERROR,
    ERROR,
    FINDING,
    INCONCLUSIVE,
    ProxyResult,
    classify_call,
    output_tensors,
    place_site,
)
from fixtures.sweeps.tables import older_than_table, skip_if_older_than_table
from simcuda import SimulationUnsupported, describe
from suites.kornia_sweeps.targets import (
    MOVED,
    MOVED_MASK,
    NOT_MOVED,
    NOT_MOVED_MASK,
    NOT_MOVED_MIXED,
    TABLE_WRITTEN_FOR,
    CoinNotMixed,
    SweepCall,
    device_targets,
    function_targets,
    kornia,
)

TARGETS = {target.name: target for target in device_targets()}
PACKAGE = "kornia"  # whose frames place a device error (a finding's site)
SIMULATED_DEVICE = "simcuda:1"
# Every swept callable on the simulated device too: at 27-40 us extra per simulated op
# (bench/simulated_cuda_overhead.py) a GPU runner's first sweep then decides no placement the
# simulation has not. The mixed batch (p=0.5, some elements transformed and some not) only here:
# meta's coin has no values to mix.
SIMULATED_CALLS: dict[str, list[SweepCall]] = {}
for _call in device_targets((MOVED, NOT_MOVED, NOT_MOVED_MIXED, MOVED_MASK, NOT_MOVED_MASK)):
    SIMULATED_CALLS.setdefault(_call.name, []).append(_call)
FOREIGN_ALLOCATION = "foreign-allocation"
VALUE_MISMATCH = "value-mismatch"
# The same CPU kernels on the same data: only a different code path taken for CUDA can differ.
ATOL, RTOL = 1e-5, 1e-4


def sweep_device(device: str) -> torch.device:
    return torch.device("meta" if device == "cpu" else device)


def device_result(target: SweepCall, device: torch.device) -> ProxyResult:
    result = classify_call(lambda: target.call(device), device, PACKAGE)
    if result.kind != ERROR:
        return result
    on_cpu = classify_call(lambda: target.call(torch.device("cpu")), "cpu")
    failing = f"the sweep's arguments for {target.name} fail on CPU: {on_cpu.detail}"
    if on_cpu.kind != CLEAN:  # a release older than the table: its own signature (a skip saying so)
        skip_if_older_than_table("kornia", kornia.__version__, TABLE_WRITTEN_FOR, failing)
    assert on_cpu.kind == CLEAN, f"harness: {failing}"
    detail = f"fails on {device}, runs on cpu: {result.detail}"
    if device.type == "meta":
        return ProxyResult(INCONCLUSIVE, detail)
    return ProxyResult(FINDING, detail, found=DEVICE_ERROR, site=result.site)


@pytest.fixture(scope="session")
def simulated_in_session(request: pytest.FixtureRequest, runnable_simulated_devices: list[str]) -> frozenset[str]:
    """The callables this session sweeps on the simulated device: their simulated test selected
    (after -k, -m and deselection; each xdist worker selects the same) and simcuda:1 runnable here."""
    if SIMULATED_DEVICE not in runnable_simulated_devices:
        return frozenset()
    return frozenset(
        item.callspec.params["name"] for item in request.session.items
        if getattr(item, "originalname", "") == test_callable_on_simulated_device.__name__ and item.callspec.params.get("device") == SIMULATED_DEVICE
    )


@pytest.mark.devices("cpu", "cuda")
@pytest.mark.parametrize("name", list(TARGETS))
def test_callable_stays_on_device(device: str, name: str, sweep_record, simulated_in_session: frozenset[str]) -> None:
    if device == "cpu" and name in simulated_in_session:
        pytest.skip(f"meta proxy left out: {SIMULATED_DEVICE} sweeps this callable in this session (simulated evidence outranks a proxy)")
    target_device = sweep_device(device)
    sweep_record("device", name, str(target_device), device_result(TARGETS[name], target_device))


def test_every_public_function_has_sweep_arguments(sweep_unswept) -> None:
    """Every public function of a swept module has arguments in targets.py's FUNCTION_CALLS; one
    without (a newer release's new function) is named in the skip and in results.json (a row
    `unswept`)."""
    sweep_unswept("device", function_targets()[1], "no arguments in suites/kornia_sweeps/targets.py (FUNCTION_CALLS)")


def value_mismatch(actual: object, expected: object) -> str | None:
    """None when every output tensor equals its CPU counterpart (floats within ATOL/RTOL), else
    the first difference."""
    actual_tensors, expected_tensors = list(output_tensors(actual)), list(output_tensors(expected))
    if len(actual_tensors) != len(expected_tensors):
        return f"{len(actual_tensors)} output tensors on the device, {len(expected_tensors)} on the CPU"
    for index, (on_device, on_cpu) in enumerate(zip(actual_tensors, expected_tensors)):
        on_device, on_cpu = on_device.detach().cpu(), on_cpu.detach()
        if (on_device.shape, on_device.dtype) != (on_cpu.shape, on_cpu.dtype):
            return f"output tensor #{index} is {on_device.dtype} {list(on_device.shape)}, on the CPU {on_cpu.dtype} {list(on_cpu.shape)}"
        if on_cpu.is_floating_point():
            if not torch.allclose(on_device, on_cpu, atol=ATOL, rtol=RTOL, equal_nan=True):
                difference = (on_device - on_cpu).abs().nan_to_num(float("inf")).max().item()
                return f"output tensor #{index} differs from the CPU run by up to {difference:.3g}"
        elif not torch.equal(on_device, on_cpu):
            return f"output tensor #{index} differs from the CPU run in {(on_device != on_cpu).sum().item()} elements"
    return None


def simulated_result(target: SweepCall, device: torch.device, simulation: object, expected: object) -> ProxyResult:
    """The call on the simulated device against the CPU run's output (`expected`), under the
    RNG state the CPU run started from."""
    logged = len(simulation.allocations)
    try:
        run = classify_call(lambda: target.call(device), device, PACKAGE)
    except SimulationUnsupported as error:
        return ProxyResult(INCONCLUSIVE, f"the simulated device cannot run this: {error}")
    if run.kind == ERROR:
        return ProxyResult(FINDING, f"fails on {device}, runs on cpu: {run.detail}", found=DEVICE_ERROR, site=run.site)
    if run.kind != CLEAN:
        return run
    if foreign := simulation.foreign_allocations({"cpu", str(device)}, since=logged):
        sites = sorted({site for entry in foreign if (site := place_site(entry.where, PACKAGE))})  # every kornia caller: a new one is new
        return ProxyResult(FINDING, describe(foreign), found=FOREIGN_ALLOCATION, site=", ".join(sites))
    if (mismatch := value_mismatch(run.output, expected)) is not None:
        return ProxyResult(FINDING, f"on {device} with the CPU run's seed: {mismatch}", found=VALUE_MISMATCH)
    return ProxyResult(CLEAN)


def coin_not_mixed(result: ProxyResult) -> bool:
    """Whether a mixed-batch run stopped on its coin (CoinNotMixed): it ran, on no mixed batch."""
    return result.kind == INCONCLUSIVE and result.detail.startswith(f"{CoinNotMixed.__name__}: ")


def way_result(target: SweepCall, device: torch.device, simulation: object, reference: ProxyResult) -> ProxyResult:
    """One way's row: the simulated run against its CPU run; with no clean CPU run, inconclusive,
    saying why (a release failing on plain CPU too, or a mixed batch whose coin did not mix). A
    coin that did not mix on the CPU does not on the device either (one seed): the device's run
    still goes, and a device error on the path the coin took is a finding, as at p=1.0."""
    if reference.kind == CLEAN:
        return simulated_result(target, device, simulation, reference.output)
    if coin_not_mixed(reference) and (run := simulated_result(target, device, simulation, None)).kind == FINDING and run.found != VALUE_MISMATCH:
        return run
    why = reference.detail if reference.kind == INCONCLUSIVE else f"kornia {kornia.__version__} fails on plain CPU too: {reference.detail}"
    return ProxyResult(INCONCLUSIVE, f"no CPU result to compare with: {why}")


@pytest.fixture
def cpu_reference(request: pytest.FixtureRequest, seeded_rng: int) -> dict[tuple[bool, bool], ProxyResult]:
    """The callable's output on a plain CPU, computed before the test's `device` fixture starts the
    simulation (so kornia sees no CUDA, as on a CPU-only machine), one per call shape
    (`SweepCall.reference`: p=1.0, a mixed batch, an image with its mask); moved or not, a module
    on the CPU computes the same. On a kornia
    older than the arguments table a CPU failure is that release's own (0.8.1 on torch 2.15:
    "check_uniform_bounds" not implemented for 'Long'); a mixed batch whose coin did not mix is
    inconclusive (no CPU result: its way on the device only looks for a device error)."""
    references: dict[tuple[bool, bool], ProxyResult] = {}
    for target in SIMULATED_CALLS[request.node.callspec.params["name"]]:
        if target.reference in references:
            continue
        if references:
            seed_torch(seeded_rng)  # the RNG state the first CPU run started from
        reference = references[target.reference] = classify_call(lambda target=target: target.call(torch.device("cpu")), "cpu")
        if (error := harness_error(target, reference, kornia.__version__)) is not None:
            raise AssertionError(error)
    return references


def harness_error(target: SweepCall, reference: ProxyResult, release: str) -> str | None:
    """The harness's own error where the CPU run failed on a release the arguments table was
    written for (a coin that did not mix is no failure: it says so itself)."""
    if reference.kind == CLEAN or coin_not_mixed(reference) or older_than_table(release, TABLE_WRITTEN_FOR):
        return None
    return f"harness: the sweep's arguments for {target.name} ({target.way}) fail on CPU: {reference.detail}"


@pytest.mark.simulable
@pytest.mark.devices(SIMULATED_DEVICE)
@pytest.mark.parametrize("name", list(SIMULATED_CALLS))
def test_callable_on_simulated_device(
    # cpu_reference before device: pytest sets fixtures up in this order (checked with --setup-plan)
    cpu_reference: dict[tuple[bool, bool], ProxyResult], device: str, simulation: object, seeded_rng: int, name: str, sweep_record
) -> None:
    results = {}
    for target in SIMULATED_CALLS[name]:
        seed_torch(seeded_rng)  # the RNG state the CPU run started from
        results[target.way] = way_result(target, torch.device(device), simulation, cpu_reference[target.reference])
    sweep_record("device", name, SIMULATED_DEVICE, results)
