"""The dispatch mode: every ATen op on a simulated tensor. Unwrap simulated tensors to their CPU
data, apply the device rules (rules.py), run the CPU kernel, wrap the outputs on the rules'
device, log what was made.

The CPU kernel runs with autograd on (tensor.py: autograd lives on the CPU data) and with the
conjugate and negative bits honoured: a mode's handler runs below those dispatch keys, so a kernel
called there on data with the bit set would ignore it (`a * b.conj()` computing `a * b`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from simcuda import rules
from simcuda.pinning import cannot_pin_message
from simcuda.tensor import SimulatedTensor, is_simulated, real_cpu
from simcuda.unsupported import UNSUPPORTED_OPS, SimulationUnsupported

if TYPE_CHECKING:
    from simcuda.simulation import Simulation

_KEY = torch._C.DispatchKey
# What a mode's handler runs without, and the CPU kernel must run with: autograd on the CPU data
# (its graph is the simulated tensor's), and the conjugate / negative views' fallbacks.
_RUN_WITH = (_KEY.AutogradCPU, _KEY.AutogradOther, _KEY.ADInplaceOrView, _KEY.Conjugate, _KEY.Negative)


@functools.cache
def _returns(func: torch._ops.OpOverload) -> tuple[bool, ...]:
    """Per return: does it alias an argument (a view, or an in-place/out= result)?"""
    return tuple(ret.alias_info is not None for ret in func._schema.returns)


@functools.cache
def _name(func: torch._ops.OpOverload) -> str:
    return func._schema.name


def device_of(value: Any) -> torch.device | None:
    if value is None or isinstance(value, torch.device):
        return value
    return torch.device("cuda", value) if isinstance(value, int) else torch.device(value)


class Unwrapped:
    """One pass over an op's arguments (ATen nests tensors one list deep at most): the CPU
    arguments to run, the operands the rules need, the generators, the caller's tensors by id,
    and whether the CPU kernel needs autograd's keys (a tensor that requires grad, a conjugate or
    negative bit)."""

    def __init__(self, sim: Simulation, name: str, args: tuple, kwargs: dict) -> None:
        self.sim = sim
        self.name = name
        self.operands: list[rules.Operand] = []
        self.generators: list[torch.Generator] = []
        self.originals: dict[int, torch.Tensor] = {}
        self.needs_autograd = False
        # Whether any operand is simulated (reports a CUDA device): one check per operand here
        # instead of a second pass over them.
        self.simulated = False
        indexing = name in rules.INDEXING_OPS
        self.args = tuple([self._value(arg, indexing and position == 1) for position, arg in enumerate(args)])
        self.kwargs = {key: self._value(value, False) for key, value in kwargs.items()} if kwargs else kwargs

    def _value(self, value: Any, is_index: bool) -> Any:
        if isinstance(value, torch.Tensor):
            return self._tensor(value, is_index)
        if isinstance(value, (list, tuple)):
            return type(value)(self._value(item, is_index) for item in value) if value and not isinstance(value[0], int) else value
        if type(value) is torch._C.Generator:  # the C type: torch.Generator is a stand-in inside
            self.generators.append(value)
        return value

    def _tensor(self, value: torch.Tensor, is_index: bool) -> torch.Tensor:
        device = value.device
        if isinstance(value, SimulatedTensor):
            cpu = value.elem
            self.simulated = True
        else:
            cpu = value
            if device.type == "cuda":
                raise SimulationUnsupported("a real CUDA tensor meeting simulated ones", self.name)
        self.operands.append(rules.operand(device, value.dim(), is_index))
        self.originals[id(cpu)] = value
        if not self.needs_autograd and (cpu.requires_grad or cpu.is_conj() or cpu.is_neg()):
            self.needs_autograd = True
        return cpu


def check_generators(sim: Simulation, generators: list[torch.Generator], device: torch.device) -> None:
    for generator in generators:
        if generator.device.type == "cuda":
            raise SimulationUnsupported("torch.Generator(device='cuda') (CUDA random streams)")
        rules.check_generator(generator.device, device)


def _follow_metadata(wrapper: torch.Tensor, data: torch.Tensor, func: torch._ops.OpOverload) -> None:
    """An in-place op changed the data's shape (unsqueeze_, t_): the wrapper follows. A wrapper has
    no storage to grow, so a resize past its size is refused."""
    try:
        with torch.utils._mode_utils.no_dispatch():
            torch.Tensor.as_strided_(wrapper, data.size(), data.stride(), data.storage_offset())
    except RuntimeError as error:
        raise SimulationUnsupported("growing a simulated tensor in place", str(func)) from error


_KEY_SETS: dict[tuple[int, int], tuple[torch._C.DispatchKeySet, torch._C.DispatchKeySet]] = {}


def _with_run_with(include: torch._C.DispatchKeySet, exclude: torch._C.DispatchKeySet) -> tuple[torch._C.DispatchKeySet, torch._C.DispatchKeySet]:
    """The thread's key sets with _RUN_WITH no longer excluded (a handful of distinct pairs
    occur: computed once each, since every op asks)."""
    raw = (include.raw_repr(), exclude.raw_repr())
    if raw not in _KEY_SETS:
        for key in _RUN_WITH:
            exclude = exclude.remove(key)
        _KEY_SETS[raw] = (include, exclude)
    return _KEY_SETS[raw]


def run_on_cpu(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    """The CPU kernel, with autograd and the conjugate / negative fallbacks the handler runs
    without (see the module docstring)."""
    forced = _with_run_with(torch._C._dispatch_tls_local_include_set(), torch._C._dispatch_tls_local_exclude_set())
    with torch._C._ForceDispatchKeyGuard(*forced):
        return func(*args, **kwargs)


class SimulatedDispatch(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Else every op goes through torch._dynamo.disable (importing Dynamo costs ~9 s here).
        return False

    def __init__(self, sim: Simulation) -> None:
        super().__init__()
        self.sim = sim

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206 - torch's protocol
        kwargs = kwargs or {}
        name = _name(func)
        if name in UNSUPPORTED_OPS:
            raise SimulationUnsupported(UNSUPPORTED_OPS[name], str(func))
        pin = bool(kwargs.pop("pin_memory", False))  # made, then pinned as ATen pins (pinning.py)
        call = Unwrapped(self.sim, name, args, kwargs)
        device_arg = device_of(kwargs.get("device"))
        if device_arg is not None:
            device_arg = self.sim.normalize(device_arg)
            call.kwargs["device"] = rules.CPU
        device = rules.output_device(name, call.operands, device_arg)
        check_generators(self.sim, call.generators, device)
        if pin and device.type == "cuda":
            raise RuntimeError("Only dense CPU tensors can be pinned")  # ATen's empty_cuda
        if name == "aten::_pin_memory" and device.type == "cuda":
            raise RuntimeError(cannot_pin_message(real_cpu(args[0]).type().replace("torch.", "torch.cuda.", 1)))
        # An op of plain CPU tensors only (the backward of the CPU data's graph, say) is an ordinary
        # op: autograd above this mode has seen it. Only an op of simulated tensors, which never
        # carry autograd themselves, runs its CPU kernel with autograd on.
        simulated = call.simulated or device.type == "cuda"
        # Without a tensor that requires grad or carries a bit, autograd's keys change nothing,
        # except the version counters and view records of in-place ops and views.
        with_keys = simulated and (call.needs_autograd or any(_returns(func)))
        try:
            out = run_on_cpu(func, call.args, call.kwargs) if with_keys else func(*call.args, **call.kwargs)
        except NotImplementedError as error:
            if "Could not run" in str(error):
                raise SimulationUnsupported("an op with no CPU kernel to stand in for its CUDA one", str(func)) from error
            raise
        if pin:
            out = torch.ops.aten._pin_memory.default(out)
        if isinstance(out, (tuple, list)):
            return type(out)(self._wrap(func, call, index, value, device) for index, value in enumerate(out))
        return self._wrap(func, call, 0, out, device)

    def _wrap(self, func, call: Unwrapped, index: int, value: Any, device: torch.device) -> Any:  # noqa: ANN001
        if not isinstance(value, torch.Tensor):
            return value
        aliases = _returns(func)
        aliased = index < len(aliases) and aliases[index]
        operands, name = call.operands, call.name
        if aliased and id(value) in call.originals:
            # In-place or out=: hand back the caller's own tensor, its metadata kept in step.
            original = call.originals[id(value)]
            if is_simulated(original) and (original.shape != value.shape or original.stride() != value.stride()):
                _follow_metadata(original, value, func)
            if name in rules.TRANSFER_OPS and len(operands) > 1 and operands[1].device != device:
                self.sim.log(name, value, device, source=operands[1].device)
            return original
        if not aliased:
            moved = name in rules.TRANSFER_OPS and operands and operands[0].device != device
            self.sim.log(name, value, device, source=operands[0].device if moved else None)
        # A conjugate or negative view keeps its bit on the CPU data, where run_on_cpu honours it.
        return SimulatedTensor(value, device) if device.type == "cuda" else value
