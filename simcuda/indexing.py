"""`x[key]` and `x[key] = value` on a simulated tensor (or with a simulated slice bound), in
Python, through the dispatcher.

PyTorch's own `Tensor.__getitem__` / `__setitem__` (torch/csrc/autograd/python_variable_indexing.cpp)
open a device guard for `x`'s device before indexing: on a tensor that reports `cuda:1` that is
`cudaSetDevice(1)`, which reaches the real CUDA runtime ("invalid device ordinal" on a one-GPU
machine, the real second GPU on a two-GPU one, a driver error without a GPU). These functions
follow the same rules with ATen ops only (select, slice, unsqueeze, index, index_put_, copy_,
fill_, alias), so the dispatch mode handles every step, autograd included. The rules, from that
file and aten/src/ATen/TensorIndexing.h:

- a tuple, or a short non-tensor sequence holding a tensor, sequence, slice, `...` or None, is a
  tuple of indices; any other sequence is one index tensor (long, or bool/uint8 as a mask);
- an int (or a 0-dim integer tensor) selects; a slice slices (step > 0); None and a bool add a
  dimension (a bool also indexes it with [0] or []); `...` skips the dimensions the others leave;
- tensors (and sequences) are advanced indices, gathered by one `index` / `index_put_` at the end;
- `x[...]` and `x[()]` are aliases of `x`, never `x` itself.

A key of Python ints, slices of ints, None and `...` only (the common case: `x[:, 0]`) can only
make a view and consults no device: it indexes the CPU data directly, outside the modes (autograd
still records it there), which costs one op instead of one dispatched op per dimension. So does
assigning through such a key a value that moves no data between devices (a Python number, a
tensor on `x`'s device, a 0-dim CPU tensor: `x[..., 0, 0] = 1.0`); a value from another device is
a copy the log records, and takes the dispatched path.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from simcuda.tensor import SimulatedTensor, real_cpu

aten = torch.ops.aten
# torch.utils._mode_utils.no_dispatch's guard itself: that wrapper is a generator-based context
# manager, microseconds on every plain `x[i]`.
_OUTSIDE_THE_MODES = torch._C._DisableTorchDispatch
_INT64_MAX = 2**63 - 1
_VALID = "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices"
_ZERO_DIM = "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"


def _is_integer(value: object) -> bool:
    return (
        isinstance(value, int) and not isinstance(value, bool)
        or type(value).__module__ == "numpy" and hasattr(value, "__index__") and getattr(value, "ndim", 1) == 0
    )


def as_index(value: object) -> int:
    """`operator.index`, with a tensor read through the dispatcher: inside the function mode's
    handler the mode is off, and the binding of a simulated tensor's `__index__` would start CUDA
    (a slice of 0-dim tensors, `x[t0:t1]`)."""
    if not isinstance(value, torch.Tensor):
        return operator.index(value)
    if value.is_floating_point() or value.is_complex() or value.numel() != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(aten.item.default(value))


def as_tuple(key: object) -> tuple:
    """The key as a tuple of indices (treatSequenceAsTuple)."""
    if isinstance(key, tuple):
        return key
    if isinstance(key, torch.Tensor) or isinstance(key, (str, bytes)) or not hasattr(key, "__len__") or not hasattr(key, "__getitem__"):
        return (key,)
    if type(key).__module__ == "numpy":  # an array is one index, never a tuple of them
        return (key,)
    items = list(key)
    if len(items) < 32 and any(isinstance(i, (torch.Tensor, slice, list, tuple)) or i is Ellipsis or i is None for i in items):
        return tuple(items)
    return (key,)


def has_simulated_bound(key: object) -> bool:
    """A slice bound that is a simulated tensor (`x[t:]` of a CPU `x`): torch's binding reads it
    with its own `__index__`, through the real CUDA; `getitem` / `setitem` read it with `as_index`."""
    return any(
        type(item) is slice and any(isinstance(bound, SimulatedTensor) for bound in (item.start, item.stop, item.step)) for item in as_tuple(key)
    )


def _index_tensor(value: object) -> torch.Tensor:
    """A sequence (or numpy array) as an index tensor on the CPU: bool or uint8 stays a mask, any
    other type becomes long (indexing_tensor_from_data). CUDA accepts CPU index tensors."""
    tensor = torch.as_tensor(value)
    return tensor if tensor.dtype in (torch.bool, torch.uint8) else tensor.to(torch.long)


def _bool_index(flag: bool) -> torch.Tensor:
    return torch.zeros(1 if flag else 0, dtype=torch.long)


def _specified_dimensions(items: tuple) -> int:
    count = 0
    for item in items:
        if isinstance(item, torch.Tensor):
            count += item.dim() if item.dtype in (torch.bool, torch.uint8) else 1
        elif item is not None and item is not Ellipsis and not isinstance(item, bool):
            count += 1
    return count


def _select(tensor: torch.Tensor, dim: int, index: int, real_dim: int) -> torch.Tensor:
    if tensor.dim() == 0:
        raise IndexError(_ZERO_DIM)
    size = tensor.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {real_dim} with size {size}")
    return aten.select.int(tensor, dim, index)


def _slice(tensor: torch.Tensor, dim: int, item: slice) -> torch.Tensor:
    step = 1 if item.step is None else as_index(item.step)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = 0 if item.start is None else as_index(item.start)
    stop = _INT64_MAX if item.stop is None else as_index(item.stop)
    return aten.slice.Tensor(tensor, dim, start, stop, step)


def apply_slicing(tensor: torch.Tensor, items: tuple) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
    """The view basic indexing gives, and the advanced indices left for `index` / `index_put_`
    (None for a dimension they skip)."""
    items = tuple(_index_tensor(i) if isinstance(i, (list, tuple)) or type(i).__module__ == "numpy" and not _is_integer(i) else i for i in items)
    specified = _specified_dimensions(items)
    if specified > tensor.dim():
        raise IndexError(f"too many indices for tensor of dimension {tensor.dim()}")
    result, dim, indices = tensor, 0, []

    def record(index: torch.Tensor) -> None:
        nonlocal dim
        indices.extend([None] * (dim - len(indices)))
        indices.append(index)
        dim += 1

    for position, item in enumerate(items):
        if _is_integer(item):
            result = _select(result, dim, as_index(item), position)
        elif isinstance(item, slice):
            result = _slice(result, dim, item)
            dim += 1
        elif item is Ellipsis:
            dim += tensor.dim() - specified
        elif item is None:
            result = aten.unsqueeze.default(result, dim)
            dim += 1
        elif isinstance(item, bool):
            result = aten.unsqueeze.default(result, dim)
            record(_bool_index(item))
        elif isinstance(item, torch.Tensor):
            if item.dim() == 0 and not item.is_floating_point() and not item.is_complex():
                if item.dtype in (torch.bool, torch.uint8):
                    result = aten.unsqueeze.default(result, dim)
                    record(_bool_index(bool(item.item())))
                else:
                    result = _select(result, dim, int(item.item()), position)
            else:
                record(item)
        else:
            raise IndexError(f"{_VALID} (got {type(item).__name__})")
    return result, indices


def _is_int_or_none(value: object) -> bool:
    return value is None or type(value) is int


def _is_basic(items: tuple) -> bool:
    """Only Python ints, slices of them, None and `...`: indexing that makes a view and nothing else."""
    return all(
        type(item) is int or item is None or item is Ellipsis
        or type(item) is slice and _is_int_or_none(item.start) and _is_int_or_none(item.stop) and _is_int_or_none(item.step)
        for item in items
    )


def getitem(tensor: torch.Tensor, key: Any) -> torch.Tensor:
    items = as_tuple(key)
    if _is_basic(items):
        with _OUTSIDE_THE_MODES():
            view = real_cpu(tensor)[items]
        return SimulatedTensor(view, tensor.device)
    sliced, indices = apply_slicing(tensor, items)
    if indices:
        return aten.index.Tensor(sliced, indices)
    return aten.alias.default(sliced) if sliced is tensor else sliced


def _strip_leading_ones(value: torch.Tensor) -> torch.Tensor:
    shape = list(value.shape)
    while shape and shape[0] == 1:
        shape.pop(0)
    return aten.view.default(value, shape) if len(shape) != value.dim() else value


def _copy_to(destination: torch.Tensor, value: torch.Tensor) -> None:
    if destination.shape == value.shape:
        aten.copy_.default(destination, value)
    elif value.dim() == 0 and value.device.type == "cpu":
        aten.fill_.Tensor(destination, value)
    else:
        aten.copy_.default(destination, aten.expand.default(_strip_leading_ones(value), list(destination.shape)))


def _value_tensor(tensor: torch.Tensor, value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (bool, int, float, complex)) or _is_integer(value):
        return torch.scalar_tensor(value, dtype=tensor.dtype)  # a 0-dim CPU tensor: CUDA takes it too
    raise TypeError(f"can't assign a {type(value).__name__} to a {tensor.dtype} tensor on {tensor.device}")


def _moves_no_data(tensor: torch.Tensor, value: Any) -> bool:
    """Assigning `value` into `tensor` copies nothing between devices."""
    if isinstance(value, torch.Tensor):
        return value.device == tensor.device or value.dim() == 0 and value.device.type == "cpu"
    return type(value) in (bool, int, float, complex)


def setitem(tensor: torch.Tensor, key: Any, value: Any) -> None:
    items = as_tuple(key)
    if key is not False and _is_basic(items) and _moves_no_data(tensor, value):
        with _OUTSIDE_THE_MODES():
            real_cpu(tensor)[items] = real_cpu(value)
        return
    value = _value_tensor(tensor, value)
    if key is False:
        return
    sliced, indices = apply_slicing(tensor, items)
    if indices:
        aten.index_put_.default(sliced, indices, _strip_leading_ones(value))
    else:
        _copy_to(sliced, value)
