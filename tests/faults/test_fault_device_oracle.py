"""The device-placement suites' shared oracle (suites/device_oracle.py), one fault per sighting on
the simulated cuda:1: a device mismatch, a tensor made on the default GPU the test never asked
for, an output that differs from the CPU's; the clean call beside them passes."""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.outcomes import BugObserved
from simcuda import simulated_cuda
from suites.device_oracle import check_matches_cpu, mean_abs

TARGET = torch.device("cuda:1")
EXPECTED = torch.arange(6.0).reshape(2, 3)
FAULTS = {
    "a CPU table meets the input": (lambda x: x + torch.ones(3), r"on cuda:1: .*Expected all tensors to be on the same device"),
    "a table made on the default GPU": (lambda x: x + torch.zeros(3, device="cuda:0").to(x.device), r"on cuda:1: .*torch\.zeros \[3\] on cuda:0"),
    "another value": (lambda x: x + 1e-3, r"differs from CPU: max_abs \|difference\| 0\.001 > 1e-05"),
}


def _check(body, **options) -> None:
    with simulated_cuda(device_count=2) as simulation:
        simulation.set_device(1)
        check_matches_cpu(lambda: body(EXPECTED.to(TARGET)), TARGET, simulation, "the op", EXPECTED, 1e-5, **options)


@pytest.mark.catches("suites/device_oracle.py::check_matches_cpu")
@pytest.mark.parametrize("fault", FAULTS)
def test_fault_device_placement(fault: str) -> None:
    body, finding = FAULTS[fault]
    with pytest.raises(BugObserved, match=finding):
        _check(body)


def test_the_clean_call_passes_and_a_mean_measure_tolerates_an_isolated_step() -> None:
    _check(lambda x: x.clone())
    one_element = torch.tensor([[3e-5, 0.0, 0.0], [0.0, 0.0, 0.0]])  # mean 5e-6, max 3e-5
    _check(lambda x: x + one_element.to(x.device), measure=mean_abs)
    with pytest.raises(BugObserved, match="max_abs"):
        _check(lambda x: x + one_element.to(x.device))
