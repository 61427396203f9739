"""The dispatch mode: every ATen op on a simulated tensor. Unwrap simulated tensors to their CPU
data, apply the device rules (rules.py), run the CPU kernel, wrap the outputs on the rules'
device, log what was made. An op of plain CPU tensors that names no other device is torch's own
op: run as it is, its new tensors logged on the CPU.

Every op of the process passes here while the simulation runs, so the path is kept short: the
schema's facts are read once per op, the rules' operands are made only when the devices differ,
and the log's caller search starts at the frame that ran the op (docs/reference/speed.md has the costs).

The CPU kernel runs with autograd on (tensor.py: autograd lives on the CPU data) and with the
conjugate and negative bits honoured: a mode's handler runs below those dispatch keys, so a kernel
called there on data with the bit set would ignore it (`a * b.conj()` computing `a * b`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from simcuda import rules
from simcuda.pinning import cannot_pin_message
from simcuda.state import is_open
from simcuda.tensor import SimulatedTensor, is_simulated, outside_its_context, real_cpu
from simcuda.unsupported import UNSUPPORTED_OPS, SimulationUnsupported

if TYPE_CHECKING:
    from simcuda.simulation import Simulation

_KEY = torch._C.DispatchKey
# What a mode's handler runs without, and the CPU kernel must run with: autograd on the CPU data
# (its graph is the simulated tensor's), and the conjugate / negative views' fallbacks.
_RUN_WITH = (_KEY.AutogradCPU, _KEY.AutogradOther, _KEY.ADInplaceOrView, _KEY.Conjugate, _KEY.Negative)


class OpInfo(NamedTuple):
    """What the mode needs of an op's schema, read once per op."""

    name: str
    aliases: tuple[bool, ...]  # per return: does it alias an argument (a view, an in-place/out= result)?
    any_alias: bool
    index_position: int  # the argument holding advanced indexing's index list, or -1
    transfer: bool  # takes operands on different devices by design (rules.TRANSFER_OPS)
    refused: str | None  # why the simulation refuses it (unsupported.py), or None
    seeded: bool  # draws random numbers (on a simulated device, from the device's own generator)
    touches_data: bool  # reads or writes memory (a view, or a query like is_pinned, does not): streams.py
    reads_inputs: bool  # reads its tensor arguments' memory (a factory like empty_like reads their shape only)
    composite: bool  # CompositeImplicitAutograd: runs as its decomposition (see __torch_dispatch__)
    kernel: Callable  # the op's C++ entry, past OpOverload.__call__'s Python frame where that frame adds nothing


# Ops that read a tensor's metadata only: no access to its memory.
METADATA_OPS = frozenset({
    "aten::is_pinned", "aten::is_same_size", "aten::is_set_to", "aten::sym_size", "aten::sym_stride", "aten::sym_numel", "aten::sym_storage_offset",
})


def is_factory(name: str) -> bool:
    """empty_like, zeros_like, new_empty, ...: their tensor arguments give a shape, dtype and device,
    never data (torch.cuda._sanitizer's factory rule, which matches `new_` on the bare name only)."""
    base = name.rpartition("::")[2]
    return base.startswith("new_") or base.endswith("_like")


# By the op's id, the op kept alive in _SEEN so that no id is reused: an OpOverload's __hash__ is
# Python, and every op asks.
_OP_INFO: dict[int, OpInfo] = {}
_SEEN: list[torch._ops.OpOverload] = []


def _is_composite(func: torch._ops.OpOverload) -> bool:
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), torch._C.DispatchKey.CompositeImplicitAutograd)
    except RuntimeError:  # an op the dispatcher does not know by that name (prim::device)
        return False


def op_info(func: torch._ops.OpOverload) -> OpInfo:
    info = _OP_INFO.get(id(func))
    if info is None:
        name = func._schema.name
        aliases = tuple(ret.alias_info is not None for ret in func._schema.returns)
        index_position = 1 if name in rules.INDEXING_OPS else -1
        seeded = torch.Tag.nondeterministic_seeded in func.tags
        returns = func._schema.returns
        view = bool(returns) and all(ret.alias_info is not None and not ret.alias_info.is_write for ret in returns)
        touches = not view and name not in METADATA_OPS
        composite = _is_composite(func)
        kernel = func._op if getattr(func, "_pyobj_dispatcher", True) is None else func  # else: its own __call__
        info = _OP_INFO[id(func)] = OpInfo(
            name, aliases, any(aliases), index_position, name in rules.TRANSFER_OPS, UNSUPPORTED_OPS.get(name), seeded, touches, not is_factory(name),
            composite, kernel,
        )
        _SEEN.append(func)
    return info


def pins_or_draws(kwargs: dict) -> bool:
    """What makes even a call of CPU tensors the simulation's: pinned memory (pinning.py; past the
    modes it reaches the real CUDA host allocator) or a generator (check_generators). Both fast
    paths for plain CPU calls ask it: this one and functions.py's."""
    return bool(kwargs.get("pin_memory")) or kwargs.get("generator") is not None


def plain_cpu(args: tuple, kwargs: dict) -> bool:
    """Every tensor argument a CPU tensor (ATen nests them one list deep at most), no device but
    the CPU, no pinning and no generator asked for: an op the simulation only logs."""
    if kwargs:
        device = kwargs.get("device")
        if device is not None and device_of(device).type != "cpu" or pins_or_draws(kwargs):
            return False
        args = (*args, *kwargs.values())
    for value in args:
        if isinstance(value, torch.Tensor):
            if not value.is_cpu:
                return False
        elif isinstance(value, (list, tuple)) and value and not isinstance(value[0], int):
            if any(isinstance(item, torch.Tensor) and not item.is_cpu for item in value):
                return False
    return True


def device_of(value: Any) -> torch.device | None:
    if value is None or isinstance(value, torch.device):
        return value
    return torch.device("cuda", value) if isinstance(value, int) else torch.device(value)


_NESTING = (list, tuple, torch._C.Generator)  # arguments Unwrapped._value looks into


class Unwrapped:
    """One pass over an op's arguments (ATen nests tensors one list deep at most): the CPU
    arguments to run, the tensors and whether they sit on more than one device (the rules' operands
    are made only then), the generators, the caller's tensors by id (for ops whose results alias
    an argument), and whether the CPU kernel needs autograd's keys (a tensor that requires grad, a
    conjugate or negative bit)."""

    __slots__ = ("args", "first", "generators", "kwargs", "mixed", "name", "needs_autograd", "originals", "owner", "simulated", "tensors")

    def __init__(self, info: OpInfo, args: tuple, kwargs: dict, owner: int) -> None:
        self.name = info.name
        self.owner = owner  # the running simulation's serial (negative for a runner's): its tensors carry it
        self.tensors: list[tuple[torch.Tensor, bool]] = []  # (the caller's tensor, is it an index)
        self.first: torch.device | None = None
        self.mixed = False
        self.generators: list[torch.Generator] = []
        self.originals: dict[int, torch.Tensor] | None = {} if info.any_alias else None
        self.needs_autograd = False
        self.simulated = False  # any operand simulated: found here instead of in a second pass
        index_position, tensor, value = info.index_position, self._tensor, self._value
        # Tensors first, scalars passed as they are: no call per scalar argument (every op runs this).
        self.args = tuple([
            tensor(arg, position == index_position) if isinstance(arg, torch.Tensor)
            else value(arg, position == index_position) if isinstance(arg, _NESTING)
            else arg
            for position, arg in enumerate(args)
        ])
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
        if isinstance(value, SimulatedTensor):
            if value._simcuda_owner != self.owner:
                check_foreign_simulated(value._simcuda_owner, self.owner, self.name)
            device, cpu, bits = value._simcuda_device, value.elem, value._simcuda_bits
            self.simulated = True
        else:
            if value.is_cuda:
                raise SimulationUnsupported("a real CUDA tensor meeting simulated ones", self.name)
            device, cpu, bits = value.device, value, None
        self.tensors.append((value, is_index))
        if self.first is None:
            self.first = device
        elif device != self.first:
            self.mixed = True
        if self.originals is not None:
            self.originals[id(cpu)] = value
        elif not self.needs_autograd and (cpu.requires_grad or (cpu.is_conj() or cpu.is_neg() if bits is None else bits)):
            self.needs_autograd = True  # asked only where no result aliases: those run with the keys anyway
        return cpu

    def device_of_operand(self, position: int) -> torch.device:
        return self.tensors[position][0].device

    def common_device(self) -> torch.device:
        """Where the rules put the output: the one device the operands share (no operand: the
        CPU), else TensorIterator's choice or its error."""
        if not self.mixed:
            return rules.CPU if self.first is None else self.first
        return rules.common_device(self.name, [rules.operand(tensor.device, tensor.dim(), is_index) for tensor, is_index in self.tensors])


def check_foreign_simulated(tensor_owner: int, owner: int, op: str) -> None:
    """A simulated tensor another simulation made meets this one's op, as the two devices would
    meet on a GPU machine: a simcuda:N test meeting the runner's tensor (an enclosing simulation,
    open) is a simulated tensor meeting real CUDA, refused; the runner meeting a tensor a closed
    simcuda:N test left behind (in a library's per-device cache) is real CUDA meeting a simulated
    tensor outside its context, SimulatedTensor's own error. A tensor of an earlier simcuda:N test
    is the same simulated device's, as a GPU's memory outlives a test."""
    if owner < 0:
        raise outside_its_context(op)
    if tensor_owner < 0 or is_open(tensor_owner):
        raise SimulationUnsupported("a real CUDA tensor meeting simulated ones", f"{op}: the simulated runner's tensor")


def check_generators(generators: list[torch.Generator], device: torch.device) -> None:
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


# Forward-only ops a composite chooses by asking its operands' `requires_grad()` in C++, which a
# simulated tensor answers False (its autograd lives on its CPU data): where that data requires
# grad, the op the composite chooses on a GPU, with the same schema (embedding_bag with per-sample
# weights; found by bench/simcuda_op_conformance.py).
DIFFERENTIABLE_TWINS = {"aten::_embedding_bag_forward_only": "_embedding_bag"}


def _differentiable_twin(name: str) -> Callable:
    return getattr(torch.ops.aten, DIFFERENTIABLE_TWINS[name]).default


def run_on_cpu(func: Callable, args: tuple, kwargs: dict) -> Any:
    """The CPU kernel, with autograd and the conjugate / negative fallbacks the handler runs
    without (see the module docstring)."""
    forced = _with_run_with(torch._C._dispatch_tls_local_include_set(), torch._C._dispatch_tls_local_exclude_set())
    with torch._C._ForceDispatchKeyGuard(*forced):
        return func(*args, **kwargs)


def run_kernel(kernel: Callable, call: Unwrapped, with_keys: bool) -> Any:
    return run_on_cpu(kernel, call.args, call.kwargs) if with_keys else kernel(*call.args, **call.kwargs)


# ATen's and torchvision's dispatch macros: `"nms_kernel" not implemented for 'Half'`.
_NOT_IMPLEMENTED_FOR = re.compile(r"not implemented for '(\w+)'")


def cpu_kernel_refusal(name: str, error: RuntimeError, device: torch.device) -> str | None:
    """Why a CPU kernel's error is the simulation's limit rather than the op's failure: no CPU
    kernel at all, or, on the simulated device, a dtype the CPU kernel lacks where the op also has
    a CUDA kernel (whose dtypes Python cannot see). None where the error stands: an op without a
    CUDA kernel fails on a real GPU too."""
    text = str(error)
    if isinstance(error, NotImplementedError) and "Could not run" in text:
        return "an op with no CPU kernel to stand in for its CUDA one"
    match = _NOT_IMPLEMENTED_FOR.search(text)
    if device.type == "cuda" and match and torch._C._dispatch_has_kernel_for_dispatch_key(name, "CUDA"):
        return f"{name} in {match[1]}: its CPU kernel lacks the dtype (its CUDA kernel may have it)"
    return None


class SimulatedDispatch(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Else every op goes through torch._dynamo.disable (importing Dynamo costs ~9 s here).
        return False

    def __init__(self, sim: Simulation) -> None:
        super().__init__()
        self.sim = sim

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        info = op_info(func)
        if info.refused is not None:
            raise SimulationUnsupported(info.refused, str(func))
        if not (args and isinstance(args[0], SimulatedTensor)) and plain_cpu(args, kwargs):
            return self._run_plain(func, info, args, kwargs)
        if info.composite:
            # Reached whole only where autograd's keys are off (torch.inference_mode): run as its
            # C++ decomposition, as autograd's keys would have (`aten::to` on the CPU data is a no-op).
            with self:
                return func._op_dk(torch._C.DispatchKey.CompositeImplicitAutograd, *args, **kwargs)
        pin = bool(kwargs.pop("pin_memory", False))  # made, then pinned as ATen pins (pinning.py)
        call = Unwrapped(info, args, kwargs, self.sim.serial)
        name = info.name
        device_arg = kwargs.get("device")
        if device_arg is not None:
            device = self.sim.normalize(device_of(device_arg))  # `device=` wins (factories, `_to_copy`, `*_like`)
            if device.type == "cuda":  # the CPU data stands in for it; `meta` and the CPU stay as asked
                call.kwargs["device"] = rules.CPU
        else:
            device = call.common_device()
        if call.generators:
            check_generators(call.generators, device)
        on_cuda = rules.is_cuda(device)
        if pin and on_cuda:
            raise RuntimeError("Only dense CPU tensors can be pinned")  # ATen's empty_cuda
        if name == "aten::_pin_memory" and on_cuda:
            raise RuntimeError(cannot_pin_message(real_cpu(args[0]).type().replace("torch.", "torch.cuda.", 1)))
        # An op of plain CPU tensors only (the backward of the CPU data's graph, say) is an ordinary
        # op: autograd above this mode has seen it. Only an op of simulated tensors, which never
        # carry autograd themselves, runs its CPU kernel with autograd on.
        simulated = call.simulated or on_cuda
        # Without a tensor that requires grad or carries a bit, autograd's keys change nothing,
        # except the version counters and view records of in-place ops and views.
        with_keys = simulated and (call.needs_autograd or info.any_alias)
        draws = info.seeded and on_cuda and not call.generators
        kernel = _differentiable_twin(name) if call.needs_autograd and name in DIFFERENTIABLE_TWINS else info.kernel
        try:
            if draws:
                with self.sim.generators.drawing(device.index):  # the device's generator, not the CPU's
                    out = run_kernel(kernel, call, with_keys)
            else:  # no `with` on the path nearly every op takes
                out = run_kernel(kernel, call, with_keys)
        except RuntimeError as error:  # NotImplementedError included
            if (refusal := cpu_kernel_refusal(name, error, device)) is not None:
                raise SimulationUnsupported(refusal, str(func)) from error
            raise
        if pin:
            out = torch.ops.aten._pin_memory.default(out)
        non_blocking = kwargs.get("non_blocking", False) or (name == "aten::copy_" and len(args) > 2 and args[2])
        if non_blocking and name == "aten::_to_copy" and call.simulated and device.type == "cpu":
            out = torch.ops.aten._pin_memory.default(out)  # ATen allocates a non_blocking copy to the host pinned
        if info.touches_data:  # ordering by streams: streams.py
            self.sim.streams.on_op(name, call.tensors if info.reads_inputs else [], out, device, bool(non_blocking))
        if isinstance(out, (tuple, list)):
            return type(out)(self._wrap(func, info, call, index, value, device, on_cuda) for index, value in enumerate(out))
        return self._wrap(func, info, call, 0, out, device, on_cuda)

    # _run_plain and _wrap are called by __torch_dispatch__ only (directly or in a generator):
    # two frames up is at or inside the code that ran the op, where the log's caller search starts.

    def _run_plain(self, func, info: OpInfo, args: tuple, kwargs: dict) -> Any:
        """An op of plain CPU tensors: run as torch runs it (autograd above the mode has seen it),
        each new tensor it returns logged on the CPU."""
        out = info.kernel(*args, **kwargs)
        outputs = out if isinstance(out, (tuple, list)) else (out,)
        if self.sim.streams.host_buffers and info.touches_data:  # the host touching a buffer a copy shares with a stream
            self.sim.streams.host_op(info.name, args if info.reads_inputs else (), outputs)
        aliases = info.aliases
        for index, value in enumerate(outputs):
            if isinstance(value, torch.Tensor) and not (index < len(aliases) and aliases[index]):
                self.sim.log(info.name, value, rules.CPU, start=sys._getframe(2))
        return out

    def _wrap(self, func, info: OpInfo, call: Unwrapped, index: int, value: Any, device: torch.device, on_cuda: bool) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        aliases = info.aliases
        aliased = index < len(aliases) and aliases[index]
        if aliased and call.originals is not None and id(value) in call.originals:
            # In-place or out=: hand back the caller's own tensor, its metadata kept in step.
            original = call.originals[id(value)]
            if is_simulated(original) and (original.shape != value.shape or original.stride() != value.stride()):
                _follow_metadata(original, value, func)
            if info.transfer and len(call.tensors) > 1 and (source := call.device_of_operand(1)) != device:
                self.sim.log(info.name, value, device, source=source, start=sys._getframe(2))
            return original
        if not aliased:
            source = call.device_of_operand(0) if info.transfer and call.tensors else None
            self.sim.log(info.name, value, device, source=source if source != device else None, start=sys._getframe(2))
        # A conjugate or negative view keeps its bit on the CPU data, where run_on_cpu honours it.
        return SimulatedTensor(value, device) if on_cuda else value
