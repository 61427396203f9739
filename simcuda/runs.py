"""One test run on the simulated device: the context held open from the test's setup to its
teardown, and what that run adds up to (refusals per phase, foreign allocations, the record the
summary counts). Used by the pytest plugin for `--simcuda` and by anything else that runs tests
on the simulated device (the harness's `simcuda:N` parametrization), so there is one
implementation of the rules."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import CodeType, FunctionType, MethodType

import torch

from simcuda.allocations import Allocation
from simcuda.context import simulated_cuda
from simcuda.simulation import Simulation

FAIL = "fail"  # an allocation on a device the test never asked for fails the test
REPORT = "report"  # ... is reported in the summary only
FOREIGN_POLICIES = (FAIL, REPORT)
_INDEXED_CUDA = re.compile(r"cuda:(\d+)")
MAX_DEVICE_INDEX = 127  # torch keeps a device's index in an int8 (c10::DeviceIndex)


def parse_simulated_device(text: str) -> torch.device:
    """`cuda:N` (0 <= N <= 127) as a device; anything else is a ValueError with a one-line message."""
    match = _INDEXED_CUDA.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"--simcuda-device: {text!r} is not a CUDA device with an index (e.g. cuda:1)")
    if int(match[1]) > MAX_DEVICE_INDEX:  # torch.device("cuda:128") wraps to cuda:-128, cuda:256 to cuda:0
        raise ValueError(f"--simcuda-device: {text!r}: a CUDA device index is 0 to {MAX_DEVICE_INDEX}")
    return torch.device("cuda", int(match[1]))


@dataclass
class SimulatedRun:
    """A `simulated_cuda()` context opened for one test, with `device` current (so that "cuda"
    names it), and the test's file: allocations its own lines make were asked for by name."""

    device: torch.device
    foreign_policy: str
    test_file: str
    named: frozenset[str] = frozenset()  # the CUDA devices the test's own parameters name ("cuda:0")
    # ... and those its own code names (MONAI's case lists, `device = "cuda:0"`): asked for, so never
    # foreign; kept out of `named`, which the log, a harness's oracle and the device count read.
    named_by_code: frozenset[str] = frozenset()
    shared_generator: bool = False  # the devices draw from the CPU's generator (simulated_cuda's)
    simulation: Simulation = field(init=False)
    outcomes: dict[str, str] = field(default_factory=dict)  # phase -> outcome
    foreign: list[Allocation] = field(default_factory=list)
    _context: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _refusals_read: int = 0

    def __post_init__(self) -> None:
        count = max(2, self.device.index + 1, *(torch.device(name).index + 1 for name in self.named))
        self.simulation = self._context.enter_context(simulated_cuda(count, shared_generator=self.shared_generator))
        self.simulation.set_device(self.device.index)
        self.simulation.log_only_outside(self.allowed_devices)

    @property
    def allowed_devices(self) -> set[str]:
        """Where the test may make tensors: the run's device, the CPU and the devices its own
        parameters name (PyTorch Geometric's `withCUDA` parametrizes `cuda:0`, and the library
        rightly allocates where its input lives)."""
        return {"cpu", str(self.device), *self.named}

    def close(self) -> None:
        self._context.close()

    def new_refusals(self) -> list[str]:
        """The features refused since the last call (one phase's refusals, caught ones included)."""
        refusals = self.simulation.refusals[self._refusals_read :]
        self._refusals_read = len(self.simulation.refusals)
        return refusals

    def real_cuda_change(self) -> str:
        """What the real CUDA did since the last call, in words; "" for nothing (real_cuda.py)."""
        return self.simulation.real_cuda.change()

    def foreign_allocations(self) -> list[Allocation]:
        """Tensors made on, or copied to, a device other than the run's and the CPU, except by the
        test's own lines and on devices its code names (a test that names cuda:0 asked for it)."""
        return [
            entry
            for entry in self.simulation.foreign_allocations(self.allowed_devices)
            if not entry.caller.startswith(f"{self.test_file}:") and entry.device not in self.named_by_code
        ]

    def record(self) -> dict:
        """What the summary counts of this test (JSON-able: it crosses from xdist workers)."""
        refused = sorted(set(self.simulation.refusals))
        return {
            "device": str(self.device),
            "named": sorted(self.named),  # the simulated devices its own parameters ran it on too
            "named_by_code": sorted(self.named_by_code),  # allocations there were asked for, never foreign
            "outcome": final_outcome(self.outcomes, bool(refused)),
            "refused": refused,
            "foreign": [
                {"op": entry.op, "device": entry.device, "shape": list(entry.shape), "caller": entry.caller}
                for entry in self.foreign
            ],
        }


def final_outcome(outcomes: dict[str, str], refused: bool) -> str:
    """One word per test from its phases' outcomes: refused, failed, xfailed, skipped or passed."""
    if refused:
        return "refused"
    for outcome in ("failed", "xfailed", "skipped"):
        if outcome in outcomes.values():
            return outcome
    return "passed"


def named_cuda_devices(values: Iterable[object]) -> frozenset[str]:
    """The indexed CUDA devices among a test's parameter values (`torch.device("cuda:0")`,
    "cuda:0"); an unindexed "cuda" names the run's own device."""
    texts = (str(value) for value in values if isinstance(value, (torch.device, str)))
    return frozenset(text for text in texts if _INDEXED_CUDA.fullmatch(text))


_CONTAINERS = (list, tuple, set, frozenset)
_MOST_VALUES = 20_000  # a module-level table of numbers is read no further


def cuda_devices_in_data(values: Iterable[object], depth: int = 5) -> frozenset[str]:
    """The indexed CUDA devices named anywhere in `values` (a device, its name, a tensor made on
    it), looking into lists, tuples (namedtuples too: parameterized's `param`), sets and dicts down
    to `depth`: MONAI's module-level case lists, and the arguments `parameterized.expand` binds to
    a test. No other object is asked for anything: a module's globals hold lazy imports that
    raise when touched."""
    found: set[str] = set()
    pending, seen = [(value, depth) for value in values], 0
    while pending and seen < _MOST_VALUES:
        value, left = pending.pop()
        seen += 1
        if isinstance(value, (str, torch.device)):
            if _INDEXED_CUDA.fullmatch(str(value)):
                found.add(str(value))
        elif isinstance(value, torch.Tensor):  # a case's tensor made on a device (at import, MONAI's metrics)
            if value.device.type == "cuda":
                found.add(str(value.device))
        elif left and isinstance(value, _CONTAINERS):
            pending += [(item, left - 1) for item in value]
        elif left and isinstance(value, dict):
            pending += [(item, left - 1) for pair in value.items() for item in pair]
    return frozenset(found)


def cuda_devices_in_code(function: object, attributes: Mapping[str, object] | None = None, depth: int = 3) -> frozenset[str]:
    """The indexed CUDA devices a test function's own code names: its literals (`device =
    "cuda:0"`, nested functions' too), the values of the globals and the `attributes` (its class's)
    that its code reads by name (a module's case list, `self.DEVICE`), and what its closure holds
    (parameterized.expand's wrapper holds the test and the case's arguments). A name it never
    reads names nothing: a library's constant imported beside the test is not asked for."""
    if isinstance(function, MethodType):  # a unittest test
        function = function.__func__
    if not isinstance(function, FunctionType) or not depth:
        return frozenset()
    literals, names, codes = [], set(), [function.__code__]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        for constant in code.co_consts:
            (codes if isinstance(constant, CodeType) else literals).append(constant)
    read = [namespace[name] for namespace in (function.__globals__, attributes or {}) for name in names if name in namespace]
    cells = [cell.cell_contents for cell in function.__closure__ or () if _filled(cell)]
    inner = [cuda_devices_in_code(cell, attributes, depth - 1) for cell in cells if isinstance(cell, (FunctionType, MethodType))]
    return cuda_devices_in_data(literals + read + cells).union(*inner)


def _filled(cell: object) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True
