"""Faults shaped like kornia's device bugs, each flagged by the simulated device on cuda:1 (a device
error, a foreign-device allocation or a wrong-device output), each beside its fixed twin that runs
clean, so the check can both fail and pass."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

from simcuda import Simulation, simulated_cuda

DEVICE = "cuda:1"
ALLOWED = {DEVICE, "cpu"}


def flags(make: Callable[[], nn.Module]) -> list[str]:
    """What the simulation shows when `make()` is built, moved to cuda:1 and run on a cuda:1 input:
    device errors, foreign allocations, held tensors or outputs off cuda:1. Empty: clean."""
    found: list[str] = []
    with simulated_cuda() as sim:
        module = make().to(DEVICE)
        held = [f"{name} held on {t.device}" for name, t in vars(module).items() if isinstance(t, torch.Tensor) and str(t.device) != DEVICE]
        try:
            out = module(torch.rand(2, 3, 8, 8, device=DEVICE))
        except RuntimeError as error:
            return [str(error)]
        found += held + foreign(sim)
        if str(out.device) != DEVICE:
            found.append(f"output on {out.device}")
    return found


def foreign(sim: Simulation) -> list[str]:
    return [f"{a.op} made on {a.device} at {a.caller}" for a in sim.foreign_allocations(allowed=ALLOWED)]


class FactoryWithoutDevice(nn.Module):
    """kornia-2837's shape: a kernel made inside forward without `device=`."""

    def __init__(self, fixed: bool = False) -> None:
        super().__init__()
        self.fixed = fixed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights = torch.tensor([0.2, 0.3, 0.5], device=x.device if self.fixed else None)
        return x * weights.view(1, 3, 1, 1)


class PlainAttribute(nn.Module):
    """kornia-2791 as released in 0.7.1: a tensor kept as a plain attribute, made on the default
    CUDA device when CUDA is available, never moved by `.to` and copied over on every call.
    Fixed as in 0.7.2: a buffer made on the CPU, moved with the module."""

    def __init__(self, fixed: bool = False) -> None:
        super().__init__()
        if fixed:
            self.register_buffer("pl", torch.rand(3))
        else:
            self.pl = torch.rand(3, device="cuda" if torch.cuda.is_available() else "cpu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.pl.to(x.device).view(1, 3, 1, 1)


class PlainAttributeUsedAsIs(PlainAttribute):
    """The same attribute used without the rescuing copy: the bug shows as an error."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.pl.view(1, 3, 1, 1)


class CpuGenerator(nn.Module):
    """Noise drawn with a generator built on the CPU."""

    def __init__(self, fixed: bool = False) -> None:
        super().__init__()
        self.fixed = fixed
        self.generator = torch.Generator().manual_seed(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fixed:
            return x + torch.rand(x.shape, generator=self.generator).to(x.device)
        return x + torch.rand(x.shape, generator=self.generator, device=x.device)


class CpuTensorMixedIn(nn.Module):
    """Noise made on the CPU and added to a CUDA input."""

    def __init__(self, fixed: bool = False) -> None:
        super().__init__()
        self.fixed = fixed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noise = torch.randn(x.shape)
        return x + (noise.to(x.device) if self.fixed else noise)


class ForgottenToOnReturn(nn.Module):
    """A CPU detour (e.g. for an op without a CUDA kernel) whose result is returned without `.to`."""

    def __init__(self, fixed: bool = False) -> None:
        super().__init__()
        self.fixed = fixed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x.cpu().clamp(0.1, 0.9)
        if x.min() < 0:  # the path that remembers
            return out.to(x.device)
        return out.to(x.device) if self.fixed else out


FAULTS = {
    "factory without device=": (
        FactoryWithoutDevice, "Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu!"
    ),
    "plain attribute left on the default device": (PlainAttribute, "pl held on cuda:0"),
    "plain attribute used as is": (PlainAttributeUsedAsIs, "found at least two devices, cuda:1 and cuda:0!"),
    "generator built on the CPU": (CpuGenerator, "Expected a 'cuda' device type for generator but found 'cpu'"),
    "CPU tensor mixed in": (CpuTensorMixedIn, "found at least two devices, cuda:1 and cpu!"),
    ".to() forgotten on a return path": (ForgottenToOnReturn, "output on cpu"),
}


@pytest.mark.parametrize(("module", "symptom"), FAULTS.values(), ids=FAULTS.keys())
def test_simulation_flags_the_fault_on_cuda1(module: type[nn.Module], symptom: str) -> None:
    found = flags(module)
    assert any(symptom in line for line in found), found


@pytest.mark.parametrize("module", [module for module, _ in FAULTS.values()], ids=FAULTS.keys())
def test_fixed_twin_runs_clean_on_cuda1(module: type[nn.Module]) -> None:
    assert flags(lambda: module(fixed=True)) == []


def test_foreign_allocation_names_the_line_that_made_it() -> None:
    found = flags(PlainAttribute)
    assert any(f"torch.rand made on cuda:0 at {__file__}" in line and "__init__" in line for line in found), found
