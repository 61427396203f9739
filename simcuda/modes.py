"""The two modes that make the simulation: every ATen op (dispatch mode) and the Python entry
points that never reach ATen without CUDA (function mode).

Dispatch mode: unwrap simulated tensors to their CPU data, apply the device rules (rules.py), run
the CPU kernel, wrap the outputs on the rules' device, log what was made. Function mode: calls that
name a CUDA device (`torch.zeros(device="cuda:1")`, `.to("cuda")`, `.cuda()`, `new_*` on a CUDA
tensor) are re-expressed on the CPU before PyTorch's Python bindings would initialise real CUDA
(which fails without a driver, and with one would hand back real CUDA tensors).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from simcuda import rules
from simcuda.tensor import SimulatedTensor, is_simulated, real_cpu
from simcuda.unsupported import UNSUPPORTED_OPS, SimulationUnsupported

if TYPE_CHECKING:
    from simcuda.simulation import Simulation


@functools.cache
def _returns(func: torch._ops.OpOverload) -> tuple[bool, ...]:
    """Per return: does it alias an argument (a view, or an in-place/out= result)?"""
    return tuple(ret.alias_info is not None for ret in func._schema.returns)


def _device_of(value: Any) -> torch.device | None:
    if value is None or isinstance(value, torch.device):
        return value
    return torch.device("cuda", value) if isinstance(value, int) else torch.device(value)


class Unwrapped:
    """One pass over an op's arguments (ATen nests tensors one list deep at most): the CPU
    arguments to run, the operands the rules need, the generators, the caller's tensors by id."""

    def __init__(self, name: str, args: tuple, kwargs: dict) -> None:
        self.name = name
        self.operands: list[rules.Operand] = []
        self.generators: list[torch.Generator] = []
        self.originals: dict[int, torch.Tensor] = {}
        indexing = name in rules.INDEXING_OPS
        self.args = tuple(self._value(arg, indexing and position == 1) for position, arg in enumerate(args))
        self.kwargs = {key: self._value(value, False) for key, value in kwargs.items()}

    def _value(self, value: Any, is_index: bool) -> Any:
        if isinstance(value, (list, tuple)):
            return type(value)(self._leaf(item, is_index) for item in value)
        return self._leaf(value, is_index)

    def _leaf(self, value: Any, is_index: bool) -> Any:
        if isinstance(value, torch.Tensor):
            cpu = real_cpu(value)
            if cpu is value and value.device.type == "cuda":
                raise SimulationUnsupported("a real CUDA tensor meeting simulated ones", self.name)
            self.operands.append(rules.Operand(value.device, value.dim(), is_index))
            self.originals[id(cpu)] = value
            return cpu
        if isinstance(value, torch.Generator):
            self.generators.append(value)
        return value


def _check_generators(generators: list[torch.Generator], device: torch.device) -> None:
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


@functools.cache
def _name(func: torch._ops.OpOverload) -> str:
    return func._schema.name


class SimulatedDispatch(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Else every op goes through torch._dynamo.disable (importing Dynamo costs ~9 s here); the
        # simulation refuses torch.compile anyway (stand_ins.py).
        return False

    def __init__(self, sim: Simulation) -> None:
        super().__init__()
        self.sim = sim

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206 - torch's protocol
        kwargs = kwargs or {}
        name = _name(func)
        if name in UNSUPPORTED_OPS:
            raise SimulationUnsupported(UNSUPPORTED_OPS[name], str(func))
        if kwargs.get("pin_memory"):
            raise SimulationUnsupported("pinned memory (pin_memory=True)", str(func))
        call = Unwrapped(name, args, kwargs)
        device_arg = _device_of(kwargs.get("device"))
        if device_arg is not None:
            device_arg = self.sim.normalize(device_arg)
            call.kwargs["device"] = rules.CPU
        device = rules.output_device(name, call.operands, device_arg)
        _check_generators(call.generators, device)
        try:
            out = func(*call.args, **call.kwargs)
        except NotImplementedError as error:
            if "Could not run" in str(error):
                raise SimulationUnsupported("an op with no CPU kernel to stand in for its CUDA one", str(func)) from error
            raise
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
        return SimulatedTensor(value, device) if device.type == "cuda" else value


def _flat_tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten((args, kwargs))[0] if isinstance(leaf, torch.Tensor)]


def _read_values(data: Any) -> Any:
    """A nested list with simulated tensors in it, those replaced by their CPU data."""
    if isinstance(data, (list, tuple)):
        return type(data)(_read_values(item) for item in data)
    return real_cpu(data) if isinstance(data, torch.Tensor) else data


def _as_index(key: Any) -> Any:
    if isinstance(key, list) or type(key).__module__ == "numpy":
        return torch.as_tensor(key)
    return key


def _is_cuda(device: Any) -> bool:
    return device is not None and not isinstance(device, torch.Tensor) and _device_of(device).type == "cuda"


BACKWARD = "autograd backward (the C++ autograd engine asks the CUDA runtime for streams)"


class SimulatedFunctions(TorchFunctionMode):
    def __init__(self, sim: Simulation) -> None:
        super().__init__()
        self.sim = sim
        tensor = torch.Tensor
        self.handlers: dict[Callable, Callable] = {
            tensor.to: self._to,
            tensor.cuda: self._cuda,
            tensor.pin_memory: self._unsupported("pinned memory (Tensor.pin_memory)"),
            tensor.backward: self._backward,
            torch.autograd.backward: self._backward,
            torch.autograd.grad: self._backward,
            torch.tensor: self._from_data,
            torch.as_tensor: self._from_data,
            torch.asarray: self._from_data,
            tensor.__getitem__: self._index,
            tensor.__setitem__: self._index,
            **{getattr(tensor, name): self._new for name in ("new_tensor", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full")},
        }

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206 - torch's protocol
        kwargs = kwargs or {}
        handler = self.handlers.get(func)
        if handler is not None:
            return handler(func, args, kwargs)
        if kwargs.get("pin_memory"):
            raise SimulationUnsupported("pinned memory (pin_memory=True)", func.__name__)
        if _is_cuda(kwargs.get("device")):
            return self._factory(func, args, kwargs, self.sim.normalize(_device_of(kwargs["device"])))
        return func(*args, **kwargs)

    def _factory(self, func, args, kwargs, device, op=None):  # noqa: ANN001, ANN202
        """Make it on the CPU, then hand it out as made on `device` (one log entry, on `device`)."""
        generator = kwargs.get("generator")
        if generator is not None:
            _check_generators([generator], device)
        cpu_kwargs = {**kwargs, "device": rules.CPU}
        requires_grad = cpu_kwargs.pop("requires_grad", False)
        with self.sim.quiet():
            made = func(*args, **cpu_kwargs)
        if not isinstance(made, torch.Tensor):
            raise SimulationUnsupported("a device= call that returns no tensor", f"{func.__name__} returned {type(made).__name__}")
        made = real_cpu(made)
        self.sim.log(op or f"torch.{func.__name__}", made, device)
        return SimulatedTensor(made, device).requires_grad_(requires_grad)

    def _from_data(self, func, args, kwargs):  # noqa: ANN001, ANN202
        """torch.tensor / as_tensor / asarray: the bindings read a CUDA tensor (or a list of them)
        through real CUDA. A tensor moves as `.to` would (as_tensor: itself when already there);
        tensors inside a list are read from their CPU data, as CUDA reads them by value."""
        data, rest = (args[0], args[1:]) if args else (kwargs.get("data", kwargs.get("obj")), ())
        device = kwargs.get("device")
        if isinstance(data, torch.Tensor) and (is_simulated(data) or _is_cuda(device)):
            target = data.device if device is None else self.sim.normalize(_device_of(device))
            copy = func is torch.tensor or kwargs.get("copy", False)
            moved = self._move(data, target, kwargs.get("dtype"), False, None, copy)
            return moved.detach().requires_grad_(kwargs.get("requires_grad", False)) if func is torch.tensor else moved
        if isinstance(data, (list, tuple)):
            data = _read_values(data)
            args, kwargs = ((data, *rest), kwargs) if args else ((), {**kwargs, "data" if "data" in kwargs else "obj": data})
        if _is_cuda(device):
            return self._factory(func, args, kwargs, self.sim.normalize(_device_of(device)))
        return func(*args, **kwargs)

    def _to(self, func, args, kwargs):  # noqa: ANN001, ANN202
        tensor, parsed = args[0], {key: value for key, value in kwargs.items() if key != "copy"}
        device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args[1:], **parsed)
        if not _is_cuda(device):
            return func(*args, **kwargs)
        return self._move(tensor, self.sim.normalize(device), dtype, non_blocking, memory_format, kwargs.get("copy", False))

    def _cuda(self, func, args, kwargs):  # noqa: ANN001, ANN202
        tensor, device = args[0], (args[1] if len(args) > 1 else kwargs.get("device"))
        target = self.sim.normalize(torch.device("cuda") if device is None else _device_of(device))
        return self._move(tensor, target, None, kwargs.get("non_blocking", False), kwargs.get("memory_format"), False)

    def _move(self, tensor, device, dtype, non_blocking, memory_format, copy):  # noqa: ANN001, ANN202, PLR0913
        if tensor.device == device and not copy:
            rest = {"dtype": dtype} if dtype is not None else {}
            return tensor.to(**rest, memory_format=memory_format) if memory_format is not None else tensor.to(**rest)
        # Through the dispatcher, not the Python binding: autograd records the copy, CUDA stays asleep.
        return torch.ops.aten._to_copy.default(
            tensor, dtype=dtype, device=device, non_blocking=non_blocking, memory_format=memory_format or torch.preserve_format
        )

    def _new(self, func, args, kwargs):  # noqa: ANN001, ANN202
        tensor, device = args[0], kwargs.get("device")
        target = self.sim.normalize(_device_of(device)) if device is not None else tensor.device
        if target.type != "cuda":
            return func(*args, **kwargs)
        cpu_kwargs = {**kwargs, "dtype": kwargs.get("dtype") or tensor.dtype}
        return self._factory(func, (real_cpu(tensor), *args[1:]), cpu_kwargs, target, op=f"Tensor.{func.__name__}")

    def _index(self, func, args, kwargs):  # noqa: ANN001, ANN202
        # A list index becomes a tensor on self's device inside the binding, which would start real
        # CUDA; a CPU index tensor selects the same elements and CUDA accepts it.
        tensor, key, *rest = args
        if is_simulated(tensor):
            key = tuple(_as_index(k) for k in key) if isinstance(key, tuple) else _as_index(key)
        return func(tensor, key, *rest, **kwargs)

    def _backward(self, func, args, kwargs):  # noqa: ANN001, ANN202
        if any(is_simulated(t) for t in _flat_tensors(args, kwargs)):
            raise SimulationUnsupported(BACKWARD)
        try:
            return func(*args, **kwargs)
        except RuntimeError as error:  # a CPU loss whose graph reaches simulated nodes
            # Only the engine asking the CUDA runtime for a stream of a simulated node's device
            # ("hasPrimaryContext expects a valid device index, but got device_index=0"): any
            # other error of the backward is the library's own and stays an error.
            if "device_index=" in str(error):
                raise SimulationUnsupported(BACKWARD) from error
            raise

    @staticmethod
    def _unsupported(feature: str) -> Callable:
        def refuse(func, args, kwargs):  # noqa: ANN001, ANN202
            raise SimulationUnsupported(feature)

        return refuse
