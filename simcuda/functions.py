"""The function mode: the Python entry points whose C++ bindings would reach real CUDA for a
simulated tensor, re-expressed through the dispatcher (which the dispatch mode handles).

- calls that name a CUDA device (`torch.zeros(device="cuda:1")`, `.to("cuda")`, `.cuda()`,
  `new_*`, `torch.tensor(..., device=)`) would start CUDA in their bindings;
- the hand-written bindings that open a device guard for the tensor's device
  (torch/csrc/autograd/python_variable_methods.cpp: `copy_`, `contiguous`, `nonzero`, `~`,
  `float()` / `int()` / `bool()` / `complex()` / `__index__`, legacy `new`) and indexing
  (python_variable_indexing.cpp; indexing.py does it in Python) go through the dispatcher instead;
- backward and `torch.autograd.grad` run where the graph is, on the CPU data (tensor.py);
- a call of plain CPU tensors that nothing reads runs past the dispatch mode (`_passes_through`).

A handled call on a tensor subclass with its own `__torch_function__` (torchvision's TVTensors)
goes through that first, with this mode still on, so the subclass re-wraps the result as it
does on a real GPU.
"""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Callable
from types import FunctionType
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._device as default_device
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_map

from simcuda import indexing, rules
from simcuda.dispatch import check_generators, device_of, pins_or_draws
from simcuda.tensor import SimulatedTensor, is_simulated, real_cpu, wrap
from simcuda.unsupported import UNSUPPORTED_OPS, SimulationUnsupported

if TYPE_CHECKING:
    from simcuda.simulation import Simulation

aten = torch.ops.aten
_KEY = torch._C.DispatchKey
_TENSOR_FUNCTION = torch.Tensor.__torch_function__.__func__
_OWN_LESS = (_TENSOR_FUNCTION, torch._C._disabled_torch_function_impl)
# Factories that draw random numbers: from the device's generator (generators.py).
_RANDOM_FACTORIES = frozenset({
    torch.rand, torch.randn, torch.randint, torch.randperm, torch.rand_like, torch.randn_like, torch.randint_like, torch.normal,
})


def _read_values(data: Any) -> Any:
    """A nested list with simulated tensors in it, those replaced by their CPU data."""
    if isinstance(data, (list, tuple)):
        return type(data)(_read_values(item) for item in data)
    return real_cpu(data) if isinstance(data, torch.Tensor) else data


def _is_cuda(device: Any) -> bool:
    return device is not None and not isinstance(device, torch.Tensor) and device_of(device).type == "cuda"


def _has_own_torch_function(cls: type) -> bool:
    function = getattr(cls.__torch_function__, "__func__", cls.__torch_function__)
    return function not in _OWN_LESS


def _scalar(tensor: torch.Tensor) -> bool | int | float | complex:
    if tensor.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    return aten.item.default(tensor)


def _invert(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.is_floating_point() or tensor.is_complex():
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return aten.bitwise_not.default(tensor)


def _nonzero(tensor: torch.Tensor, *, as_tuple: bool = False) -> torch.Tensor | tuple[torch.Tensor, ...]:
    return tuple(aten.nonzero_numpy.default(tensor)) if as_tuple else aten.nonzero.default(tensor)


def _without_copy(positional: tuple) -> tuple[tuple, bool]:
    """`Tensor.to`'s positional arguments without `copy`, which `_parse_to` refuses, and its value:
    it follows `non_blocking` in each form (`to(dtype, non_blocking, copy)`, `to(other, ...)`,
    `to(device, dtype, non_blocking, copy)`; op_db's samples pass it so)."""
    at = 2 if positional and isinstance(positional[0], (torch.dtype, torch.Tensor)) else 3
    return (positional[:at], bool(positional[at])) if len(positional) > at else (positional, False)


def legacy_cuda_dtype(kind: Any) -> torch.dtype | None:
    """The dtype a legacy CUDA type names (`"torch.cuda.DoubleTensor"`, `torch.cuda.HalfTensor`),
    or None for anything else (a dtype, a CPU type). Another CUDA name gets the error a GPU's
    torch raises (it starts CUDA first: without a GPU, "Found no NVIDIA driver"); a sparse one is
    refused."""
    name = rules.legacy_cuda_type(kind)
    if name is None:
        return None
    if name.startswith("torch.cuda.sparse."):
        raise SimulationUnsupported("sparse tensors (a legacy sparse CUDA type)", name)
    dtype = getattr(getattr(torch, name.removeprefix("torch.cuda."), None), "dtype", None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"invalid type: {name!r}")  # torch/csrc/utils/tensor_types.cpp
    return dtype


def _legacy_new(tensor: torch.Tensor, *args: Any) -> torch.Tensor:
    """`x.new(2, 3)`, `x.new(torch.Size)`, `x.new([data])`, `x.new()`: the same type and device."""
    if len(args) == 1 and not isinstance(args[0], (int, torch.Size)):
        return tensor.new_tensor(args[0])
    return tensor.new_empty(args[0] if len(args) == 1 and isinstance(args[0], torch.Size) else args)


# The guarded bindings, each as the dispatcher's ops it stands for (only for a simulated tensor).
_GUARDED = {
    torch.Tensor.copy_: lambda self, src, non_blocking=False: aten.copy_.default(self, src, non_blocking),
    torch.Tensor.contiguous: lambda self, memory_format=torch.contiguous_format: aten.contiguous.default(self, memory_format=memory_format),
    torch.Tensor.nonzero: _nonzero,
    torch.nonzero: _nonzero,
    torch.Tensor.__invert__: _invert,
    torch.Tensor.__float__: lambda self: float(_scalar(self)),
    torch.Tensor.__int__: lambda self: int(_scalar(self)),
    torch.Tensor.__complex__: lambda self: complex(_scalar(self)),
    torch.Tensor.__bool__: lambda self: bool(aten.is_nonzero.default(self)),
    torch.Tensor.__index__: indexing.as_index,
    torch.Tensor.new: _legacy_new,
}


# Autograd's keys above the dispatch mode. A plain tensor that requires grad meeting a simulated
# one (`.to("cuda")` of a leaf, a CPU scalar parameter times a simulated tensor) would have autograd
# record a node there with a CUDA-device output, whose stream the engine asks real CUDA for. With
# them excluded the op reaches the mode, whose CPU kernel records it on the CPU data (tensor.py).
_AUTOGRAD_ABOVE = functools.reduce(
    operator.or_, (torch._C.DispatchKeySet(key) for key in (_KEY.AutogradCPU, _KEY.AutogradCUDA, _KEY.AutogradOther, _KEY.ADInplaceOrView))
)


# The factories shaped after a tensor: torch's bindings set the result's requires_grad themselves.
_LIKE_FACTORIES = (torch.empty_like, torch.zeros_like, torch.ones_like, torch.full_like, torch.rand_like, torch.randn_like, torch.randint_like)
_OPERATOR_TYPES = (torch._ops.OpOverloadPacket, torch._ops.OpOverload)
_CONSTRUCTORS = default_device._device_constructors()  # those torch.set_default_device places
# torch >= 2.14 can run a Python-level torch function's body with the mode that got it still on
# (torch.overrides.redispatch_function); before, a mode's handler runs with the mode popped.
_REDISPATCH = getattr(torch.overrides, "redispatch_function", None)


def unsupported_operator(func: Callable) -> str | None:
    """The feature a `torch.ops` operator called from Python stands for, when the simulation
    cannot imitate it. Asked here, before its C++ kernel: torchvision registers its nvJPEG ops so
    that on a GPU machine the kernel runs before the dispatch mode sees the op and reaches the real
    CUDA ("invalid device ordinal" on one GPU; seen on an H200, torchvision 0.26)."""
    if not isinstance(func, _OPERATOR_TYPES):
        return None
    return UNSUPPORTED_OPS.get(getattr(func, "_qualified_op_name", None) or func._schema.name)


# A call of plain CPU tensors runs with these excluded, past every mode (see _passes_through).
_MODE_KEYS = torch._C.DispatchKeySet(_KEY.Python) | torch._C.DispatchKeySet(_KEY.PythonTLSSnapshot)
_PLAIN_TENSORS = frozenset({torch.Tensor, torch.nn.Parameter})  # exact types: a subclass may have its own dispatch
# Values that name no device, stream or generator (an int does only as `device=`, or as `.to`'s
# and `.cuda`'s argument, which never pass): anything else (a string, a device, a TVTensor) keeps
# the call on the modes.
_INERT = frozenset({int, float, bool, complex, type(None), type(Ellipsis), torch.dtype, torch.Size, torch.memory_format, torch.layout})


def _plain_value(value: Any) -> bool:
    kind = type(value)
    if kind in _PLAIN_TENSORS:
        return value.is_cpu
    if kind is slice:  # an indexing key's: its bounds may be tensors
        return _plain_value(value.start) and _plain_value(value.stop) and _plain_value(value.step)
    return kind in _INERT


def _plain_cpu_call(args: tuple, kwargs: dict) -> bool:
    """Every argument a plain CPU tensor or an inert value (nested one list deep at most), no
    `device=`, and nothing that makes the call the simulation's (dispatch.pins_or_draws)."""
    if kwargs:
        if kwargs.get("device") is not None or pins_or_draws(kwargs):
            return False
        args = (*args, *kwargs.values())
    for value in args:
        if type(value) is list or type(value) is tuple:
            if not all(_plain_value(item) for item in value):
                return False
        elif not _plain_value(value):
            return False
    return True


# Queries autograd's layer answers itself: below it they would meet the device rules as ops.
# (Module.to asks whether a CPU parameter can take a CUDA tensor's data: dense and dense, yes.)
_ANSWERED_ABOVE = frozenset({torch._has_compatible_shallow_copy_type})


def _plain_grad_meets_simulated(func: Callable, args: tuple, kwargs: dict) -> bool:
    """A plain tensor that requires grad among the operands, with a simulated one (operands nest
    one list deep at most). Runs for every call with more than one argument: no grad mode, no check."""
    if not torch.is_grad_enabled() or func in _ANSWERED_ABOVE:
        return False
    simulated = grad = False
    for value in (*args, *kwargs.values()) if kwargs else args:
        for leaf in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(leaf, torch.Tensor):
                if isinstance(leaf, SimulatedTensor):
                    simulated = True
                elif leaf.requires_grad:
                    grad = True
    return simulated and grad


def _below_autograd(func: Callable, *args: Any, **kwargs: Any) -> Any:
    with torch._C._ExcludeDispatchKeyGuard(_AUTOGRAD_ABOVE):
        return func(*args, **kwargs)


def _cpu_data(value: Any) -> Any:
    return tree_map(lambda leaf: real_cpu(leaf) if isinstance(leaf, torch.Tensor) else leaf, value)


class SimulatedFunctions(TorchFunctionMode):
    def __init__(self, sim: Simulation) -> None:
        super().__init__()
        self.sim = sim
        tensor = torch.Tensor
        self.handlers: dict[Callable, Callable] = {
            tensor.to: self._to,
            tensor.cuda: self._cuda,
            tensor.type: self._type,
            tensor.backward: self._backward,
            torch.autograd.backward: self._backward,
            torch.autograd.grad: self._grad,
            torch.tensor: self._from_data,
            torch.as_tensor: self._from_data,
            torch.asarray: self._from_data,
            tensor.__getitem__: self._getitem,
            tensor.__setitem__: self._setitem,
            # Parses `Module.to(device=..., dtype=...)`: it makes no tensor, whatever device it names.
            torch._C._nn._parse_to: lambda func, args, kwargs: func(*args, **kwargs),
            **{getattr(tensor, name): self._new for name in ("new_tensor", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full")},
            **dict.fromkeys(_LIKE_FACTORIES, self._like),
            **{func: self._unguarded(through) for func, through in _GUARDED.items()},
        }
        # The handlers that add nothing for plain CPU tensors and values (indexing, the guarded
        # bindings, a tensor from flat data) let such a call pass through; the others may still
        # reach CUDA (`x.cuda()`, `x.to(1)`) or must see it (backward).
        self.passable = frozenset({tensor.__getitem__, tensor.__setitem__, torch.tensor, torch.as_tensor, torch.asarray, *_GUARDED})
        self._inside: set[Callable] = set()  # the Python-level functions running with this mode on

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        default = default_device.CURRENT_DEVICE
        if default is not None and default.type == "cuda" and kwargs.get("device") is None and func in _CONSTRUCTORS:
            # torch.set_default_device("cuda"): its mode lies below this one and would name the real
            # CUDA after this mode handed the call on.
            kwargs = {**kwargs, "device": default}
        handler = self.handlers.get(func)
        if (handler is None or func in self.passable) and self._passes_through(args, kwargs):
            with torch._C._ExcludeDispatchKeyGuard(_MODE_KEYS):
                return func(*args, **kwargs)
        if handler is None and (feature := unsupported_operator(func)):
            raise SimulationUnsupported(feature, str(func))
        if handler is not None:
            owner = args[0] if args else None
            if isinstance(owner, torch.Tensor) and _has_own_torch_function(type(owner)) and torch._C._is_torch_function_enabled():
                with self:  # the subclass's own rules first; its inner call comes back here
                    return type(owner).__torch_function__(func, types, args, kwargs)
            return handler(func, args, kwargs)
        if _REDISPATCH is not None and type(func) is FunctionType and func not in self._inside:
            return self._run_inside(func, types, args, kwargs)
        if not kwargs and len(args) == 1 and not isinstance(args[0], (list, tuple)):
            return func(*args)  # one tensor (`x.shape`, `x.exp()`): nothing to place
        if _is_cuda(kwargs.get("device")):
            return self._factory(func, args, kwargs, self.sim.normalize(device_of(kwargs["device"])))
        if _plain_grad_meets_simulated(func, args, kwargs):
            return _below_autograd(func, *args, **kwargs)
        return func(*args, **kwargs)

    def _run_inside(self, func, types, args, kwargs):
        """A Python-level torch function (`F.multi_head_attention_forward`, `torch.unravel_index`)
        runs its body with this mode on, so the factories and guarded bindings inside it are
        re-expressed here instead of reaching the real CUDA. While it runs, a call of the same
        function comes from its own C binding (`Tensor.unflatten`'s `super().unflatten`) and runs
        as torch runs a handler."""
        self._inside.add(func)
        try:
            with self:
                return _REDISPATCH(func, types, args, kwargs)
        finally:
            self._inside.discard(func)

    def _passes_through(self, args: tuple, kwargs: dict) -> bool:
        """A call of plain CPU tensors that nothing here watches runs as torch runs it, past the
        dispatch mode (a peer's CPU reference computations, torchvision's loops of `x[i, j]`: a
        mode costs several microseconds per ATen op). Only where no other dispatch mode is open:
        it must see every op."""
        return torch._C._len_torch_dispatch_stack() == 1 and not self.sim.watches_plain_cpu_ops() and _plain_cpu_call(args, kwargs)

    def _factory(self, func, args, kwargs, device, op=None):
        """Make it on the CPU, then hand it out as made on `device` (one log entry, on `device`)."""
        generator = kwargs.get("generator")
        if generator is not None:
            check_generators([generator], device)
        if kwargs.get("pin_memory"):
            raise RuntimeError("Only dense CPU tensors can be pinned")  # ATen's empty_cuda
        cpu_kwargs = {**kwargs, "device": rules.CPU}
        requires_grad = cpu_kwargs.pop("requires_grad", False)
        with (
            self.sim.quiet(),
            self.sim.generators.drawing(device.index) if func in _RANDOM_FACTORIES else contextlib.nullcontext(),
        ):
            made = func(*args, **cpu_kwargs)
        if not isinstance(made, torch.Tensor):
            raise SimulationUnsupported("a device= call that returns no tensor", f"{func.__name__} returned {type(made).__name__}")
        made = real_cpu(made)
        self.sim.log(op or f"torch.{func.__name__}", made, device)
        self.sim.streams.made(op or f"torch.{func.__name__}", made, device)
        return SimulatedTensor(made, device).requires_grad_(requires_grad)

    def _from_data(self, func, args, kwargs):
        """torch.tensor / as_tensor / asarray: the bindings read a CUDA tensor (or a list of them)
        through real CUDA. A tensor moves as `.to` would (as_tensor: itself when already there);
        tensors inside a list are read from their CPU data, as CUDA reads them by value."""
        data, rest = (args[0], args[1:]) if args else (kwargs.get("data", kwargs.get("obj")), ())
        device = kwargs.get("device")
        if isinstance(data, torch.Tensor) and (is_simulated(data) or _is_cuda(device)):
            target = data.device if device is None else self.sim.normalize(device_of(device))
            copy = func is torch.tensor or kwargs.get("copy", False)
            moved = self._move(data, target, kwargs.get("dtype"), False, None, copy)
            return moved.detach().requires_grad_(kwargs.get("requires_grad", False)) if func is torch.tensor else moved
        if isinstance(data, (list, tuple)):
            data = _read_values(data)
            args, kwargs = ((data, *rest), kwargs) if args else ((), {**kwargs, "data" if "data" in kwargs else "obj": data})
        if _is_cuda(device):
            return self._factory(func, args, kwargs, self.sim.normalize(device_of(device)))
        return func(*args, **kwargs)

    def _to(self, func, args, kwargs):
        tensor, parsed = args[0], {key: value for key, value in kwargs.items() if key != "copy"}
        positional, copy = _without_copy(args[1:])
        # Only the parse, never a subclass's __torch_function__: `t.to(boxes)` would have a TVTensor
        # wrap the parsed device as itself (torchvision's set_return_type("TVTensor")).
        with torch._C.DisableTorchFunctionSubclass():
            device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*positional, **parsed)
        if not _is_cuda(device):
            return func(*args, **kwargs)
        return self._move(tensor, self.sim.normalize(device), dtype, non_blocking, memory_format, kwargs.get("copy", copy))

    def _cuda(self, func, args, kwargs):
        tensor, device = args[0], (args[1] if len(args) > 1 else kwargs.get("device"))
        target = self.sim.normalize(torch.device("cuda") if device is None else device_of(device))
        return self._move(tensor, target, None, kwargs.get("non_blocking", False), kwargs.get("memory_format"), False)

    def _move(self, tensor, device, dtype, non_blocking, memory_format, copy):
        if tensor.device == device and not copy:
            rest = {"dtype": dtype} if dtype is not None else {}
            return tensor.to(**rest, memory_format=memory_format) if memory_format is not None else tensor.to(**rest)
        # Through the dispatcher, not the Python binding: CUDA stays asleep, and the mode's CPU
        # kernel records the copy on the CPU data (a leaf's gradient flows back through it).
        return _below_autograd(
            torch.ops.aten._to_copy.default,
            tensor, dtype=dtype, device=device, non_blocking=non_blocking, memory_format=memory_format or torch.preserve_format,
        )

    def _type(self, func, args, kwargs):
        """`x.type("torch.cuda.DoubleTensor")` (or the legacy class): a move, as the binding makes
        it after starting CUDA itself: to the current device from another device type, else
        keeping the tensor's own device. Any other `type()` call runs as torch runs it."""
        tensor, rest = args[0], args[1:]
        dtype = legacy_cuda_dtype(rest[0] if rest else kwargs.get("dtype"))
        if dtype is None:
            return func(*args, **kwargs)
        target = tensor.device if tensor.device.type == "cuda" else torch.device("cuda", self.sim.current)
        non_blocking = rest[1] if len(rest) > 1 else kwargs.get("non_blocking", False)
        return self._move(tensor, target, dtype, non_blocking, None, False)

    def _new(self, func, args, kwargs):
        tensor, device = args[0], kwargs.get("device")
        target = self.sim.normalize(device_of(device)) if device is not None else tensor.device
        if target.type != "cuda":
            return func(*args, **kwargs)
        cpu_kwargs = {**kwargs, "dtype": kwargs.get("dtype") or tensor.dtype}
        return self._factory(func, (real_cpu(tensor), *args[1:]), cpu_kwargs, target, op=f"Tensor.{func.__name__}")

    def _like(self, func, args, kwargs):
        """`torch.*_like(x)`: a new leaf whose `requires_grad` is the call's, as torch's binding
        sets it after the op. The op itself, run with autograd on a CPU data that requires grad,
        would hand out randint_like's unimplemented derivative (backward then raises) and drop a
        `requires_grad=True` asked of empty_like."""
        if _is_cuda(kwargs.get("device")):
            return self._factory(func, args, kwargs, self.sim.normalize(device_of(kwargs["device"])))
        if not (args and is_simulated(args[0])):
            return func(*args, **kwargs)
        made = func(*args, **{key: value for key, value in kwargs.items() if key != "requires_grad"})
        real_cpu(made).detach_()  # a fresh tensor: whatever autograd recorded on its CPU data is no part of it
        return made.requires_grad_(kwargs.get("requires_grad", False))

    def _getitem(self, func, args, kwargs):
        tensor, key = args
        return indexing.getitem(tensor, key) if is_simulated(tensor) or indexing.has_simulated_bound(key) else func(tensor, key)

    def _setitem(self, func, args, kwargs):
        tensor, key, value = args
        return indexing.setitem(tensor, key, value) if is_simulated(tensor) or indexing.has_simulated_bound(key) else func(tensor, key, value)

    def _backward(self, func, args, kwargs):
        """Tensor.backward / torch.autograd.backward, run on the CPU data where the graph is."""
        self.sim.graph_trees.backward_ran()
        return func(*_cpu_data(args), **_cpu_data(kwargs))

    def _grad(self, func, args, kwargs):
        """torch.autograd.grad on the CPU data; each gradient shown on its input's device."""
        inputs = kwargs["inputs"] if "inputs" in kwargs else args[1]
        inputs = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
        self.sim.graph_trees.backward_ran()
        grads = func(*_cpu_data(args), **_cpu_data(kwargs))
        return tuple(
            wrap(grad, source.device) if grad is not None and is_simulated(source) else grad for grad, source in zip(grads, inputs)
        )

    @staticmethod
    def _unguarded(through: Callable) -> Callable:
        """A guarded binding: through the dispatcher for a simulated tensor, as it was otherwise."""

        def call(func, args, kwargs):
            return through(*args, **kwargs) if args and is_simulated(args[0]) else func(*args, **kwargs)

        return call
