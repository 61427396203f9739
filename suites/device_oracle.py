"""The oracle the device-placement suites share (kornia-2867, kornia-3028, kornia-4415, kornia-4536): a call on
`target` behaves as the same call on the CPU. Three sightings, each `observe`d: PyTorch's device
mismatch (the shared classifier's FINDING), an allocation on a device the test never asked for
(the simulated device's log), an output that differs from the CPU's beyond `tolerance`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from fixtures.known_bugs.outcomes import Inconclusive, observe
from fixtures.proxies.meta_proxy import CLEAN, DEVICE_ERROR, FINDING, WRONG_DEVICE_OUTPUT, classify_call
from simcuda import describe

if TYPE_CHECKING:
    from simcuda import Simulation


def max_abs(difference: torch.Tensor) -> float:
    return difference.abs().max().item()


def mean_abs(difference: torch.Tensor) -> float:
    """For a codec whose rounding may flip an isolated coefficient by one step on another device."""
    return difference.abs().mean().item()


# What a device-placement finding can be (meta_proxy's kinds): a device mismatch raised, an output left elsewhere.
EVERY_SYMPTOM = (DEVICE_ERROR, WRONG_DEVICE_OUTPUT)


def check_runs_on(
    call: Callable[[], torch.Tensor], target: torch.device, simulation: Simulation | None, what: str, symptoms: tuple[str, ...] = EVERY_SYMPTOM
) -> torch.Tensor:
    """`call()` must run on `target` and allocate only there and on the CPU; its output. For a call
    whose CPU result is known only after it ran (parameters drawn on the device). A finding of a
    kind that is not the bug's symptom (`symptoms`) is another bug's: it hides this one, so the
    case cannot tell (kornia-3066's image left on the CPU, behind 0.9.0rc1's device mismatch)."""
    run = classify_call(call, target)
    if run.kind == FINDING and run.found not in symptoms:
        raise Inconclusive(f"{what} on {target}: {run.detail}: not this bug's symptom ({', '.join(symptoms)}), and it hides whether it is there")
    observe(run.kind == FINDING, f"{what} on {target}: {run.detail}")
    assert run.kind == CLEAN, f"harness: the call failed for another reason: {run.detail}"
    foreign = simulation.foreign_allocations({"cpu", str(target)}) if simulation else []
    observe(bool(foreign), f"{what} on {target}: {describe(foreign)}")
    return run.output


def check_matches_cpu(  # the call, where, what it is, and what to compare with how
    call: Callable[[], torch.Tensor],
    target: torch.device,
    simulation: Simulation | None,
    what: str,
    expected: torch.Tensor,
    tolerance: float,
    measure: Callable[[torch.Tensor], float] = max_abs,
    symptoms: tuple[str, ...] = EVERY_SYMPTOM,
) -> None:
    """`call()` (which puts its inputs on `target`) must run, allocate only on `target` and the CPU,
    and return `expected` (the CPU result) within `tolerance` by `measure`. `what` names the call
    in every finding: "RandomJPEG (module moved)"; `symptoms` as for check_runs_on."""
    output = check_runs_on(call, target, simulation, what, symptoms)
    difference = measure(output.cpu() - expected)
    observe(difference > tolerance, f"{what} on {target} differs from CPU: {measure.__name__} |difference| {difference:.3g} > {tolerance}")
