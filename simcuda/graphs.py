"""Simulated CUDA-graph trees: `torch.compile` inside `simulated_cuda()`.

A compiled callable runs eagerly on the simulated device (the simulation claims nothing about
compiled kernels), and when torch would run it as CUDA graphs (`mode="reduce-overhead"` or
`"max-autotune"`: `torch._inductor.list_mode_options`; `options={"triton.cudagraphs": True}`;
`backend="cudagraphs"`) each call plays the rules of torch's CUDA-graph trees
(torch/_inductor/cudagraph_trees.py) with torch's own pieces:

- every call of a compiled callable starts a new generation as Dynamo's does
  (`install_generation_tagging_init`), and the generation is torch's own
  (`CUDAGraphTreeManager.get_curr_generation`: Dynamo's counter, or the mark-step counter once
  `torch.compiler.cudagraph_mark_step_begin()` has been called);
- per device and per graph (a compiled callable and the shapes it is called with): the first run
  warms up, the next records, later ones replay; while a path warms up, every graph on it warms up;
- a new generation first invalidates the storages the warm-up or recording path allocated that
  are still alive (returned, kept by the code as SAM2's position cache keeps one, or viewed),
  with torch's own message (`CUDAGraphTreeManager.format_dealloc_msg`, naming the line that made
  the tensor) set through torch's own check (`torch._C._set_storage_data_ptr_access_error_msg`,
  on a `StorageWeakRef` as torch keeps them): any later read raises it. Replay outputs are not
  invalidated, as torch does not (a kept replay output stays correct here where on a GPU it is
  silently overwritten: a false negative, never a false alarm);
  no generation starts while a compiled forward waits for its backward, unless mark-step was used;
- every tensor input is read (`untyped_storage().data_ptr()`) before the graph runs, where torch's
  warm-up and recording read them;
- graphs inductor would not run as CUDA graphs are not simulated, and torch's own skip counter
  counts them (`log_cudagraph_skip_and_bump_counter`): CPU tensor inputs, inputs on several
  devices (checked before the first run), a mutated input that is not a parameter or buffer
  (checked after it: its outputs are then not managed).

Outputs are tracked per graph run by storage: every storage allocated during it (the simulation's
allocation log reports them) that is alive afterwards is that run's output, whether the code returned it, kept
it or a view of it; an output that aliases an input, a parameter or anything older allocates none.
"""

from __future__ import annotations

import functools
import linecache
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._pytree import tree_leaves

from simcuda.allocations import caller_frame
from simcuda.tensor import is_simulated, real_cpu

if TYPE_CHECKING:
    from simcuda.state import Devices

# torch._inductor and torch._dynamo are imported where a compiled run needs them: loading them
# takes seconds, and most simulations compile nothing.
WARMUP, RECORDING, EXECUTION = "warm-up", "recording", "replay"


def uses_cuda_graphs(backend: object, mode: str | None, options: dict | None) -> bool:
    """Whether `torch.compile(backend=, mode=, options=)` runs its graphs as CUDA graphs."""
    if backend == "cudagraphs":
        return True
    if backend != "inductor":
        return False
    if options and "triton.cudagraphs" in options:
        return bool(options["triton.cudagraphs"])
    import torch._inductor  # deferred: compiled runs only (note above WARMUP)

    if mode is not None:
        return bool(torch._inductor.list_mode_options(mode).get("triton.cudagraphs", False))
    return bool(torch._inductor.config.triton.cudagraphs)


def _storage_key(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage()._cdata


def _storage_ref(tensor: torch.Tensor) -> StorageWeakRef:
    """A weak reference to the tensor's storage: alive while any tensor or view holds it."""
    return StorageWeakRef(tensor.untyped_storage())


def _stack_trace(frame: Any) -> str:
    """The line that made a tensor, as torch's messages show a graph node's stack trace."""
    if frame is None:
        return ""
    code = frame.f_code
    line = linecache.getline(code.co_filename, frame.f_lineno).strip()
    return f'File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}\n    {line}'


@dataclass
class Capture:
    """What one graph run allocates: each storage, by weak reference, with the line that made it
    (a view made from it later, or kept by the code, keeps it alive), and what it made on the CPU."""

    allocated: dict[int, tuple[StorageWeakRef, str]] = field(default_factory=dict)
    cpu_outputs: list[str] = field(default_factory=list)

    def add(self, tensor: torch.Tensor, on_cpu: bool) -> None:
        """A tensor the run allocated (simulation.py logs each one)."""
        trace = _stack_trace(caller_frame())
        if on_cpu and tensor.dim() > 0:
            self.cpu_outputs.append(f"{list(tensor.shape)}, {trace.splitlines()[0] if trace else 'in torch'}")
        elif not on_cpu:
            self.allocated.setdefault(_storage_key(tensor), (_storage_ref(tensor), trace))

    def outputs(self) -> list[tuple[StorageWeakRef, str]]:
        """The storages the run allocated that are alive after it: its outputs, returned or kept."""
        return [(ref, trace) for ref, trace in self.allocated.values() if not ref.expired()]


@dataclass
class GraphTree:
    """One device's CUDA-graph tree, as torch's CUDAGraphTreeManager keeps it."""

    generation: int | None = None
    path_state: str | None = None
    path_outputs: list[tuple[StorageWeakRef, str]] = field(default_factory=list)
    warmed: set[object] = field(default_factory=set)
    recorded: set[object] = field(default_factory=set)
    recordings: int = 0
    forward_waits_for_backward: bool = False

    def begin(self, graph: object, generation: int, mark_step_used: bool) -> str:
        """The phase this run of `graph` is, after ending the previous generation if one ended."""
        if self.path_state is not None and generation != self.generation and (mark_step_used or not self.forward_waits_for_backward):
            if self.path_state in (WARMUP, RECORDING):
                self._invalidate_path()
            self.path_state, self.path_outputs = None, []
        if graph not in self.warmed or self.path_state == WARMUP:
            phase = WARMUP
            self.warmed.add(graph)
        elif graph in self.recorded and self.path_state != RECORDING:
            phase = EXECUTION
        else:
            phase = RECORDING
        self.generation = generation
        return phase

    def end(self, graph: object, phase: str, outputs: list[tuple[StorageWeakRef, str]], needs_backward: bool) -> None:
        """After a run that completed: a recording counts only then, as torch adds a graph to its
        tree only once it was recorded (a dead input raises before that)."""
        if phase == RECORDING:
            self.recorded.add(graph)
            self.recordings += 1
        if phase != EXECUTION:
            self.path_outputs += outputs
        self.path_state = phase
        self.forward_waits_for_backward = needs_backward

    def _invalidate_path(self) -> None:
        """torch's dealloc_current_path_weakrefs: a later read of a dead output raises torch's text."""
        from torch._inductor.cudagraph_trees import CUDAGraphTreeManager  # deferred: compiled runs only (note above WARMUP)

        for ref, trace in self.path_outputs:
            if not ref.expired():
                torch._C._set_storage_data_ptr_access_error_msg(ref.cdata, CUDAGraphTreeManager.format_dealloc_msg(trace or None))


def _skip(reason: str) -> None:
    from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter  # deferred: compiled runs only (note above WARMUP)

    log_cudagraph_skip_and_bump_counter(f"skipping cudagraphs due to {reason}")


class GraphTrees:
    """A simulation's CUDA-graph trees, one per simulated device, and the runs in progress."""

    def __init__(self) -> None:
        self.trees: dict[int, GraphTree] = {}
        self.capture: Capture | None = None
        self.skipped: dict[object, str] = {}
        self.depth = 0

    def recorded(self, device_index: int) -> int:
        """CUDA graphs recorded on the device's tree (torch's CUDAGraphTreeManager.roots)."""
        tree = self.trees.get(device_index)
        return tree.recordings if tree else 0

    def backward_ran(self) -> None:
        for tree in self.trees.values():
            tree.forward_waits_for_backward = False

    @contextmanager
    def running(self) -> Iterator[bool]:
        """A compiled call: True for the outermost (a new generation), False for one inside it
        (Dynamo inlines a compiled function called from compiled code)."""
        from torch._dynamo.mutation_guard import install_generation_tagging_init  # deferred: compiled runs only (note above WARMUP)

        outermost = self.depth == 0
        if outermost:
            install_generation_tagging_init()  # Dynamo's entry into a compiled frame: generation + 1
        self.depth += 1
        try:
            yield outermost
        finally:
            self.depth -= 1

    def _skips(self, graph: object, reason: str) -> None:
        self.skipped[graph] = reason
        _skip(reason)

    def run(self, graph: object, call: Callable[[], Any], inputs: list[torch.Tensor], static: list[torch.Tensor], current: int) -> Any:
        """Run `graph` (a compiled callable and its input shapes) under the tree rules; `current`
        is the current device, where a graph without inputs on a device runs."""
        devices = {tensor.device.index for tensor in inputs + static if is_simulated(tensor)}
        cpu = [tuple(t.shape) for t in inputs + static if not is_simulated(t) and t.device.type == "cpu" and t.dim() > 0]
        if graph not in self.skipped and (cpu or len(devices) > 1):
            self._skips(graph, f"cpu device (inputs {cpu})" if cpu else "multiple devices")
        if graph in self.skipped:
            return call()
        from torch._inductor.cudagraph_trees import CUDAGraphTreeManager  # deferred: compiled runs only (note above WARMUP)

        tree = self.trees.setdefault(devices.pop() if devices else current, GraphTree())
        phase = tree.begin(graph, CUDAGraphTreeManager.get_curr_generation(), CUDAGraphTreeManager.user_invoked_mark_step())
        for tensor in inputs + static:  # where torch reads them: a dead input raises torch's text here
            real_cpu(tensor).untyped_storage().data_ptr()
        versions = [real_cpu(tensor)._version for tensor in inputs]
        self.capture = capture = Capture()
        try:
            result = call()
        finally:
            self.capture = None
        mutated = sum(real_cpu(tensor)._version != version for tensor, version in zip(inputs, versions))
        if mutated or capture.cpu_outputs:  # found in its first run: its outputs are not graph memory
            self._skips(graph, f"mutated inputs ({mutated} instances)" if mutated else f"cpu device ({capture.cpu_outputs[0]})")
            return result
        needs_backward = any(isinstance(leaf, torch.Tensor) and leaf.requires_grad for leaf in tree_leaves(result))
        tree.end(graph, phase, capture.outputs(), needs_backward and torch.is_grad_enabled())
        return result


def _graph_key(target: object, args: tuple, kwargs: dict) -> tuple:
    """A graph: the compiled callable and the shapes, dtypes and devices it is called with (a
    recompile of Dynamo is a new graph)."""
    leaves = [leaf for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)]
    return (id(target), tuple((tuple(t.shape), t.dtype, t.device) for t in leaves))


class SimulatedCompiled:
    """What `torch.compile` returns inside the simulation, for a function."""

    def __init__(self, trees: GraphTrees, devices: Devices, target: Callable, cuda_graphs: bool) -> None:
        functools.update_wrapper(self, target, updated=())
        self._trees = trees
        self._devices = devices
        self._target = target
        self._cuda_graphs = cuda_graphs

    def _static_inputs(self) -> list[torch.Tensor]:
        return []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        trees = self._trees
        with trees.running() as outermost:
            if not (self._cuda_graphs and outermost):
                return self._target(*args, **kwargs)
            inputs = [leaf for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)]
            graph = _graph_key(self._target, args, kwargs)
            return trees.run(graph, lambda: self._target(*args, **kwargs), inputs, self._static_inputs(), self._devices.current)


class SimulatedCompiledModule(torch.nn.Module):
    """What `torch.compile` returns inside the simulation, for a module (torch's OptimizedModule
    keeps the module as `_orig_mod` and forwards attributes to it)."""

    def __init__(self, trees: GraphTrees, devices: Devices, module: torch.nn.Module, cuda_graphs: bool) -> None:
        super().__init__()
        self._orig_mod = module
        self.__dict__["_compiled"] = SimulatedCompiled(trees, devices, module, cuda_graphs)
        self.__dict__["_compiled"]._static_inputs = lambda: [*module.parameters(), *module.buffers()]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_compiled"](*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._orig_mod, name)


def simulated_compile(trees: GraphTrees, devices: Devices) -> Callable[..., Any]:
    """The stand-in for `torch.compile` while a simulation runs (same signature): its graph trees
    record what compiled runs capture on its current device."""

    def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None, backend: object = "inductor",
                mode: str | None = None, options: dict | None = None, disable: bool = False, **rest: Any) -> Any:
        if model is None:
            return lambda target: compile(
                target, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options, disable=disable, **rest
            )
        if disable:
            return model
        cuda_graphs = uses_cuda_graphs(backend, mode, options)
        if isinstance(model, torch.nn.Module):
            return SimulatedCompiledModule(trees, devices, model, cuda_graphs)
        return SimulatedCompiled(trees, devices, model, cuda_graphs)

    return compile


@contextmanager
def mark_step_restored() -> Iterator[None]:
    """The mark-step counter as it was before the simulation, afterwards: on a GPU
    torch._dynamo.reset() resets it, which on a machine without CUDA it does not."""
    trees_module = sys.modules.get("torch._inductor.cudagraph_trees")
    saved = trees_module.MarkStepBox.mark_step_counter if trees_module else 0
    try:
        yield
    finally:
        trees_module = sys.modules.get("torch._inductor.cudagraph_trees")
        if trees_module is not None:
            trees_module.MarkStepBox.mark_step_counter = saved
