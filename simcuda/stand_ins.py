"""What the context swaps into torch for its duration: `torch.cuda`'s device, stream and event API
and `torch.accelerator`'s answered by the simulation, `torch.compile` (graphs.py), custom autograd
Functions on the CPU data, and refusals for what it cannot imitate (raw CUDA graphs, functions
compiled before the simulation, CUDA use from another thread)."""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import inspect
import multiprocessing.context
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

from simcuda import rules
from simcuda.allocations import caller_summary
from simcuda.devices import device_properties
from simcuda.graphs import simulated_compile
from simcuda.serialization import loadable, simulated_load
from simcuda.state import OPEN_SIMULATIONS
from simcuda.streams import SimulatedEvent, SimulatedStream
from simcuda.tensor import is_simulated, modes_suspended, node_itself, real_cpu, stood_for, wrap
from simcuda.unsupported import SimulationUnsupported

if TYPE_CHECKING:
    from simcuda.gpus import RunnerGpus
    from simcuda.simulation import Simulation
    from simcuda.state import Devices


class _GeneratorType(type):
    """`torch.Generator` inside the context: CPU generators as before, CUDA ones refused;
    `isinstance(g, torch.Generator)` still holds for real generators."""

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, torch._C.Generator)

    def __call__(cls, device: Any = "cpu") -> torch._C.Generator:
        if torch.device(device).type == "cuda":
            raise SimulationUnsupported("torch.Generator(device='cuda') (CUDA random streams)")
        return torch._C.Generator(device)


class SimulatedGenerator(metaclass=_GeneratorType):
    pass


def refuse(feature: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise SimulationUnsupported(feature)

    return refused


# NVML reads the machine's real GPUs (utilization, temperature, power, clocks, memory in use) by
# index, past CUDA: a simulated index would read a real GPU, or none.
NVML = (
    "NVML queries of a real GPU (torch.cuda.utilization, temperature, power_draw, clock_rate, memory_usage, "
    "device_memory_used, list_gpu_processes)"
)
# The caching allocator's memory handed out raw (for other frameworks): the simulated device has none
# to hand out, and a pointer freed would be the real allocator's.
RAW_MEMORY = "raw memory of the CUDA caching allocator (torch.cuda.caching_allocator_alloc, caching_allocator_delete)"
# torch's own classes whose construction reaches the real CUDA in C++ (a stream from the real pool,
# a graph, an event for the real streams). Inside a test `torch.cuda.Stream` and `Event` are the
# simulation's and `torch.cuda.CUDAGraph` is refused: these are reached through a name taken from
# torch before the simulation opened, or through their own modules (torch.cuda.streams,
# torch.cuda.graphs); while a module is collected, through any name (the simulation a stream would
# belong to ends with the collection).
_MADE_PAST_THE_SIMULATION = "made at import, or through a name imported before the simulation"
REAL_CLASSES = {
    torch.cuda.graphs.CUDAGraph: "CUDA graphs (torch.cuda.CUDAGraph)",
    torch.cuda.streams.Stream: f"a CUDA stream of torch's own class (torch.cuda.streams.Stream, ExternalStream: {_MADE_PAST_THE_SIMULATION})",
    torch.cuda.streams.Event: f"a CUDA event of torch's own class (torch.cuda.streams.Event: {_MADE_PAST_THE_SIMULATION})",
}
# Refused by their `__init__`, which the Python class defines (its `__new__` is pybind11's): the C++
# constructor reaches the real CUDA past `torch.cuda._lazy_init` once a real GPU started in the process.
_MEM_POOL = getattr(torch.cuda.memory, "MemPool", None)  # torch 2.5 and later
REAL_INITS = {_MEM_POOL: "a CUDA memory pool (torch.cuda.MemPool: the real caching allocator's)"} if _MEM_POOL else {}


def real_classes_refused() -> list[tuple[Any, str, Any]]:
    """`__new__` of each of REAL_CLASSES refusing it by name (ExternalStream's calls Stream's), and
    `__init__` of each of REAL_INITS."""
    return [
        *((cls, "__new__", staticmethod(refuse(feature))) for cls, feature in REAL_CLASSES.items()),
        *((cls, "__init__", refuse(feature)) for cls, feature in REAL_INITS.items()),
    ]


def cuda_entry_point() -> str:
    """The outermost torch function on the stack below the caller, the one the caller called
    (`torch.cuda.get_device_properties`, `torch.accelerator.current_stream`): it asked for CUDA's
    lazy init. "torch.cuda" where no torch frame is found."""
    package = str(Path(torch.__file__).parent)
    frame, found = sys._getframe(2), "torch.cuda"
    while frame is not None and frame.f_code.co_filename.startswith(package):
        found, frame = f"{frame.f_globals.get('__name__', 'torch')}.{frame.f_code.co_name}", frame.f_back
    return found


def generator_api(sim: Simulation, index: Callable[..., int]) -> dict[str, Any]:
    """torch.cuda's RNG functions, answered from the simulation's generators, one per device
    (generators.py). `index(device)`: the device's index (on a runner, starting CUDA as the real
    functions do; seeding does not start it: torch defers it)."""
    generators = sim.generators

    def set_rng_state_all(states: list[torch.Tensor]) -> None:
        for device, state in enumerate(states):
            generators.set_state(index(device), state)

    return {
        "get_rng_state": lambda device="cuda": generators.get_state(index(device)),
        "set_rng_state": lambda state, device="cuda": generators.set_state(index(device), state),
        "get_rng_state_all": lambda: [generators.get_state(index(i)) for i in range(sim.device_count)],
        "set_rng_state_all": set_rng_state_all,
        "manual_seed": lambda seed: generators.manual_seed(sim.current, seed),
        "manual_seed_all": generators.manual_seed_all,
        "seed": lambda: generators.manual_seed(sim.current, torch.Generator().seed()),
        "seed_all": lambda: generators.manual_seed_all(torch.Generator().seed()),
        "initial_seed": lambda: generators.initial_seed(index()),
    }


def cuda_default_type_refused(real: Callable[[Any], None]) -> Callable[[Any], None]:
    """`torch.set_default_tensor_type(torch.cuda.FloatTensor)` sets the process's default to the
    real CUDA in C++, where it stays past the simulation: refused before anything is set (torch
    deprecates it for `set_default_device("cuda")`, which is simulated). A CPU type runs."""

    def set_default_tensor_type(kind: Any) -> None:
        if (name := rules.legacy_cuda_type(kind)) is not None:
            raise SimulationUnsupported(f"a CUDA default tensor type ({name}: use torch.set_default_device)", caller_summary())
        real(kind)

    return set_default_tensor_type


_PACKAGE = str(Path(__file__).parent) + os.sep
_HANDLER_ENTRY = torch.overrides.handle_torch_function.__code__
_REDISPATCH = getattr(getattr(torch.overrides, "redispatch_function", None), "__code__", None)


def _ours(frame: FrameType) -> bool:
    return frame.f_code.co_filename.startswith(_PACKAGE) or frame.f_code is _REDISPATCH


def caller_without_the_simulation(frame: FrameType) -> FrameType | None:
    """The frame that called `frame` as it would be without the simulation: past the function
    mode's frames, torch's handler entry that called it, and the outer call of the same Python
    function that entered the handler (`F.softmax` runs twice: once to reach the mode, once as
    its body)."""
    back = frame.f_back
    if back is None or not _ours(back):
        return back
    back = _past_the_simulation(back)
    if back is not None and back.f_code is frame.f_code:
        back = back.f_back
    return back


def _past_the_simulation(frame: FrameType | None) -> FrameType | None:
    """The first frame from `frame` outward that is neither the function mode's nor torch's
    handler entry that called it."""
    while frame is not None and _ours(frame):
        frame = frame.f_back
    if frame is not None and frame.f_code is _HANDLER_ENTRY:
        frame = frame.f_back
    return frame


def warn_naming_the_caller(real: Callable[..., None]) -> Callable[..., None]:
    """`warnings.warn` whose `stacklevel` counts the frames a run without the simulation has: a
    torch Python function's deprecation (`stacklevel=2` or more) names the test's line, not the
    function mode's, so pytest's summary and a filter by module read it as on a GPU. A simulation
    opened inside another wraps warnings' own `warn`, not the outer stand-in, which would count
    the frames again."""
    return _warn_stand_in(getattr(real, "__wrapped__", real))


@functools.cache  # one stand-in per `warn` for the process: TorchScript's table holds it by id
def _warn_stand_in(real: Callable[..., None]) -> Callable[..., None]:
    """The stand-in, registered as TorchScript's builtin `aten::warn`, as warnings' own `warn` is:
    a function scripted inside the simulation that calls `warnings.warn` compiles the call to
    the op instead of compiling the stand-in (which fails: its source unwraps to a builtin)."""

    def warn(message: Any, category: Any = None, stacklevel: int = 1, source: Any = None, **options: Any) -> None:
        if options:  # Python 3.12's skip_file_prefixes: the caller chose the frames itself
            real(message, category, stacklevel + 1, source, **options)
            return
        start = target = sys._getframe(1)
        for _ in range(max(stacklevel, 1) - 1):
            target = caller_without_the_simulation(target) if target is not None else None
        depth, frame = 1, start
        while frame is not None and frame is not target:
            frame, depth = frame.f_back, depth + 1
        real(message, category, (depth if frame is not None else stacklevel) + 1, source)

    warn.__wrapped__ = real
    torch.jit._builtins._register_builtin(warn, "aten::warn")
    return warn


def shown_naming_the_caller(real: Callable[[warnings.WarningMessage], None]) -> Callable[[warnings.WarningMessage], None]:
    """`warnings._showwarnmsg`, through which every warning that passed the filters is shown (or
    recorded, under `catch_warnings(record=True)`): one torch raises from C++ names the Python
    frame that called the binding, a frame of the modes inside the simulation; shown, it names the
    frame that would have called it without the simulation. Nothing runs until a warning is shown."""
    real = getattr(real, "__wrapped__", real)

    def show(message: warnings.WarningMessage) -> None:
        if message.filename.startswith(_PACKAGE):
            frame = sys._getframe(1)
            while frame is not None and (frame.f_code.co_filename, frame.f_lineno) != (message.filename, message.lineno):
                frame = frame.f_back
            if (caller := _past_the_simulation(frame)) is not None:
                message.filename, message.lineno = caller.f_code.co_filename, caller.f_lineno
        real(message)

    show.__wrapped__ = real
    return show


def properties_of(devices: Devices) -> Callable[..., Any]:
    """`torch.cuda.get_device_properties` answered for `devices`: the runner's simulated GPU (an
    H100's capability, which decides library paths: bf16, TF32, Triton), and what reads it
    (`get_device_capability`, `get_device_name`). Bound to the devices alone, never to a simulation:
    the plugin answers with it while a project collects (pytest_plugin.py)."""

    def get_device_properties(device: Any = None) -> Any:
        if isinstance(device, int) and not 0 <= device < devices.count:
            raise AssertionError("Invalid device id")  # torch.cuda.get_device_properties' text
        return device_properties(rules.index_of(device, devices))

    return get_device_properties


def checked_device(sim: Simulation, device: Any) -> Any:
    if isinstance(device, int) and not 0 <= device < sim.device_count:
        raise AssertionError("Invalid device id")  # torch.cuda.get_device_properties' text
    return device


def runner_api(sim: Simulation, runner: RunnerGpus) -> dict[str, Any]:
    """The runner's own answers: lazy init, device properties, its generators (gpus.py). Entry
    points whose real ones start CUDA start it here too."""

    def index(device: Any = None) -> int:
        runner.start_cuda()
        return sim.index_of(device)

    def get_device_properties(device: Any = None) -> Any:
        return runner.properties(index(checked_device(sim, device)))

    def synchronize(device: Any = None) -> None:
        index(device)  # starts CUDA, as the real one does
        sim.streams.synchronize(device)

    def started(function: Callable[..., Any]) -> Callable[..., Any]:
        def starting(*args: Any, **kwargs: Any) -> Any:
            runner.start_cuda()
            return function(*args, **kwargs)

        return starting

    return {
        "is_available": lambda: sim.device_count > 0,
        "is_initialized": lambda: runner.started,
        "get_device_properties": get_device_properties,
        "current_device": started(lambda: sim.current),
        "set_device": started(sim.set_device),
        "synchronize": synchronize,
        "current_stream": lambda device=None: sim.streams.current(index(device)),
        "default_stream": lambda device=None: sim.streams.default(index(device)),
        **generator_api(sim, index),
    }


def cuda_api(sim: Simulation) -> dict[str, Any]:
    """`torch.cuda` attribute -> stand-in."""
    owner = threading.get_ident()

    def lazy_init() -> None:
        # Reached only by a CUDA entry the function mode did not re-express, or from another thread
        # (modes are thread-local: DataLoader workers, user threads). It never returns: C++
        # remembers a lazy init that returned for the whole process (device_lazy_init.cpp), and
        # every later factory, in any thread and after the simulation, would go straight to the
        # real CUDA.
        if threading.get_ident() != owner:
            raise SimulationUnsupported("CUDA used from another thread (modes are thread-local)", caller_summary())
        raise SimulationUnsupported(f"a CUDA entry point the simulation does not stand in for: {cuda_entry_point()}", caller_summary())

    def exchange_device(index: int) -> int:
        previous = sim.current
        if index >= 0:
            sim.set_device(index)
        return previous

    api = {
        **generator_api(sim, sim.index_of),
        "is_available": lambda: True,
        "is_initialized": lambda: True,  # the simulated CUDA has started: its context is open
        "device_count": lambda: sim.device_count,
        "get_device_properties": properties_of(sim.devices),
        "current_device": lambda: sim.current,
        "set_device": sim.set_device,
        "_exchange_device": exchange_device,
        "_maybe_exchange_device": exchange_device,
        "synchronize": sim.streams.synchronize,
        "Stream": SimulatedStream,
        "Event": SimulatedEvent,
        "current_stream": lambda device=None: sim.streams.current(sim.index_of(device)),
        "default_stream": lambda device=None: sim.streams.default(sim.index_of(device)),
        "set_stream": lambda stream: stream is not None and sim.streams.set_current(stream),
        "stream": sim.streams.using,
        "is_current_stream_capturing": lambda: False,
        # A kernel that only spins (torch's stream tests hold work back with it): it touches no
        # memory, and simulated work is done when queued, so there is nothing to keep.
        "_sleep": lambda cycles: None,
        "cudart": refuse("the CUDA runtime API (torch.cuda.cudart(): mem_get_info, profiler ranges)"),
        # Its stream check rejects a simulated stream before the allocator's entry is reached.
        "caching_allocator_alloc": refuse(RAW_MEMORY),
        "_lazy_init": lazy_init,
        "_get_pynvml_handler": refuse(NVML),
        "CUDAGraph": refuse("CUDA graphs (torch.cuda.CUDAGraph)"),
        "graph": refuse("CUDA graphs (torch.cuda.graph)"),
        "make_graphed_callables": refuse("CUDA graphs (torch.cuda.make_graphed_callables)"),
    }
    return api if sim.runner is None else {**api, **runner_api(sim, sim.runner)}


# The caching allocator's C entries, which torch.cuda.memory calls once CUDA has started (inside the
# simulation it has): what needs no allocator is a no-op, what reads one is refused naming the
# public functions that reach it, so no statistic is ever made up or read from a real GPU.
ALLOCATOR_NO_OPS = (
    "_cuda_emptyCache", "_cuda_resetPeakMemoryStats", "_cuda_resetAccumulatedMemoryStats",
    "_cuda_resetPeakHostMemoryStats", "_cuda_resetAccumulatedHostMemoryStats",
)
ALLOCATOR_READS = {
    "_cuda_memoryStats": "torch.cuda.memory_stats and what reads it (memory_allocated, memory_reserved, max_memory_*, memory_summary)",
    "_cuda_memorySnapshot": "torch.cuda.memory_snapshot",
    "_cuda_hostMemoryStats": "torch.cuda.host_memory_stats",
    "_cuda_setMemoryFraction": "torch.cuda.set_per_process_memory_fraction",
    "_cuda_getMemoryFraction": "torch.cuda.get_per_process_memory_fraction",
}
# The caching allocator's own memory handed out raw (RAW_MEMORY), and the allocator itself replaced:
# a replaced allocator stays the real process's after the simulation.
ALLOCATOR_REFUSALS = {
    "_cuda_cudaCachingAllocator_raw_alloc": RAW_MEMORY,
    "_cuda_cudaCachingAllocator_raw_delete": RAW_MEMORY,
    "_cuda_changeCurrentAllocator": "a pluggable CUDA allocator (torch.cuda.memory.change_current_allocator: the process's real allocator)",
}


def torch_internals(sim: Simulation, api: dict[str, Any]) -> list[tuple[Any, str, Any]]:
    """Names torch's own functions look up when they are called, and no module imports from torch:
    torch.cuda's private entries (`api`'s: its lazy init, the device exchange `torch.cuda.device`
    makes, NVML's handle), the copies torch.cuda's modules imported by name (`is_initialized`,
    which torch.cuda.memory's statistics ask; the capture check of `is_current_stream_capturing`),
    and torch._C's allocator entries. Stood in for while a module is collected too (`swapped`
    without module functions), where torch.cuda's public names stay torch's own: a CUDA call there
    is answered or refused as in a test, never handed to the real CUDA."""
    return [
        *((torch.cuda, name, value) for name, value in api.items() if name.startswith("_")),
        (torch.cuda.memory, "is_initialized", api["is_initialized"]),
        (torch.cuda.memory, "_get_nvml_device_index", refuse(NVML)),  # list_gpu_processes reads memory's own copy
        (torch.cuda.graphs, "_cuda_isCurrentStreamCapturing", api["is_current_stream_capturing"]),
        *((torch._C, name, value) for name, value in allocator_api(sim).items()),
    ]


def collection_copies(api: dict[str, Any]) -> list[tuple[Any, str, Any]]:
    """torch.cuda's names that torch.cuda.memory and torch.cuda.random imported, where they would
    start the real CUDA while a module is collected: there `is_initialized` is torch's own (False),
    so their `_lazy_init` would go on to the real one (inside a test it returns at once, and C++
    reaches the simulation's), and random's `device_count` would count the real GPUs; random's
    `_lazy_call` as where the real CUDA has not started (unstarted_lazy_call)."""
    lazy_init = [(module, "_lazy_init", api["_lazy_init"]) for module in (torch.cuda.memory, torch.cuda.random)]
    return [*lazy_init, (torch.cuda.random, "device_count", api["device_count"]), (torch.cuda.random, "_lazy_call", unstarted_lazy_call)]


def unstarted_lazy_call(callable: Callable[[], None], **kwargs: Any) -> None:
    """torch.cuda.random's `_lazy_call` while a module is collected (a module-level
    `torch.manual_seed`): dropped, as on a machine whose real CUDA never starts, where torch queues
    it for that start. Where an earlier test started the real CUDA, torch's own would run it at once:
    the simulated device count over the real generators (an IndexError on one GPU)."""


def allocator_api(sim: Simulation) -> dict[str, Any]:
    """`torch._C` allocator entry -> stand-in. The runner counts its live storages (memory.py) and
    answers the statistics from them; a simcuda:N test has no allocator of its own to read."""
    refused = {
        name: refuse(f"CUDA memory statistics: {entry} (the simulated device has no caching allocator)") for name, entry in ALLOCATOR_READS.items()
    }
    refused.update((name, refuse(feature)) for name, feature in ALLOCATOR_REFUSALS.items())
    api = {**dict.fromkeys(ALLOCATOR_NO_OPS, lambda *args: None), **refused}
    if sim.runner is None:
        return api
    memory = sim.runner.memory
    return {
        **api,
        "_cuda_memoryStats": memory.stats,
        "_cuda_emptyCache": memory.empty_cache,
        "_cuda_resetPeakMemoryStats": memory.reset_peak,
        "_cuda_resetAccumulatedMemoryStats": memory.reset_accumulated,
    }


def fresh_interpreters_refused() -> list[tuple[Any, str, Any]]:
    """A process started with spawn or forkserver (a DataLoader's `multiprocessing_context`) is a
    fresh interpreter without the simulation: on a GPU machine it would reach the real CUDA, where
    the simulated index may not exist, or pass on a real GPU and be counted as simulated. Refused.
    Forked processes (Linux's default) inherit the simulation with the forking thread."""
    return [
        (
            process,
            "_Popen",
            staticmethod(refuse(f"a process started with {method} (a fresh interpreter has no simulation: it would reach real CUDA)")),
        )
        for process, method in ((multiprocessing.context.SpawnProcess, "spawn"), (multiprocessing.context.ForkServerProcess, "forkserver"))
    ]


def accelerator_api(sim: Simulation) -> dict[str, Any]:
    """`torch.accelerator` attribute -> stand-in: CUDA is the accelerator, as on a GPU machine (the
    DataLoader asks it whether to pin, and its pin thread sets the device)."""

    def set_device_index(device: Any) -> None:
        sim.set_device(device if isinstance(device, (int, torch.device)) else torch.device(device))

    return {
        "is_available": lambda: sim.device_count > 0,
        "device_count": lambda: sim.device_count,
        "current_accelerator": lambda check_available=False: torch.device("cuda"),
        "current_device_index": lambda: sim.current,
        "set_device_index": set_device_index,
        "synchronize": sim.streams.synchronize,
        "current_stream": lambda device=None: sim.streams.current(sim.index_of(device)),  # torch.optim asks it whether it is capturing
        "set_stream": lambda stream: sim.streams.set_current(stream),
    }


def simulated_as_subclass(original: Callable[..., Any]) -> Callable[..., Any]:
    """`Tensor.as_subclass` (which no torch function mode sees): a simulated tensor made an
    instance of `cls` stays on the simulated device, as a CUDA tensor of a TVTensor class does; a
    CPU tensor made an instance of a simulated twin (torchvision re-wraps `image.to("cpu")` in the
    class it was called on) becomes one of the class the twin stands for, as on a GPU."""

    def as_subclass(tensor: torch.Tensor, cls: type) -> torch.Tensor:
        return wrap(tensor.elem, tensor.device, like=cls) if is_simulated(tensor) else original(tensor, stood_for(cls))

    return as_subclass


# AOTAutograd (aot_function, torch.library.opcheck's aot_dispatch tests) handles a tensor subclass
# by putting autograd on the wrapper; the simulation keeps it on the CPU data (tensor.py).
AOT_WITH_GRAD = "AOTAutograd on a simulated tensor that requires grad"
_AOT_AUTOGRAD = "torch._functorch._aot_autograd."  # its CompiledFunction; torch.func's own Functions run as any other


def nodes_themselves(node_of: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """torch.autograd.graph's node of a tensor, for the C++ it hands it to (a gradient edge, the
    engine's will-execute check): the node itself, where a simulated tensor's `grad_fn` gives a
    SimulatedNode."""

    @functools.wraps(node_of)
    def node_itself_of(tensor: Any) -> Any:
        return node_itself(node_of(tensor))

    return node_itself_of


def traced_outside(trace: Callable[..., Any]) -> Callable[..., Any]:
    """`torch.jit.trace` inside the simulation. The tracer records the ops it sees, and the
    simulation runs some below it, so a trace made through the modes holds constants where tensors
    were and its first run fails ("aten::view() Expected a value of type 'Tensor' ... found type
    'int'": PyTorch Geometric's traceable convolutions). A trace of CPU tensors is made with the
    simulation's modes off, as without it; one of a simulated tensor is refused."""

    @functools.wraps(trace)
    def traced(func: Any, example_inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
        held = func.state_dict().values() if isinstance(func, torch.nn.Module) else ()
        if any(isinstance(value, torch.Tensor) and is_simulated(value) for value in [*tree_leaves((example_inputs, args, kwargs)), *held]):
            raise SimulationUnsupported("TorchScript tracing of a simulated tensor (torch.jit.trace)", caller_summary())
        with modes_suspended():
            return trace(func, example_inputs, *args, **kwargs)

    return traced


def fake_from_tensor(original: Callable[..., Any]) -> Callable[..., Any]:
    """`FakeTensorMode.from_tensor`, where AOTAutograd's dynamic tracing meets its inputs: a
    simulated tensor that requires grad is refused (AOT_WITH_GRAD); others convert as they do."""

    def from_tensor(mode: Any, tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if is_simulated(tensor) and tensor.requires_grad:
            raise SimulationUnsupported(AOT_WITH_GRAD, "torch._subclasses.fake_tensor.FakeTensorMode.from_tensor")
        return original(mode, tensor, *args, **kwargs)

    return from_tensor


def legacy_subclass_new(original: Callable[..., Any]) -> staticmethod:
    """`Cls(...)`, torch's legacy constructor, for a Tensor subclass without a `__new__` of its own:
    outside any mode torch builds a plain tensor (an alias of a tensor argument, autograd kept) and
    gives it the class; under a Python mode that tensor already has a Python object, which torch
    refuses to retype (pytorch/pytorch#149290, under any dispatch mode), so the class is given as
    `as_subclass` gives it. Its signature is `(*args, **kwargs)`, as the C function's reads: Dynamo,
    first imported inside the simulation, checks it against its polyfill of `Tensor.__new__`."""

    def __new__(*args: Any, **kwargs: Any) -> torch.Tensor:
        cls, *rest = args
        if cls is torch.Tensor:
            return original(cls, *rest, **kwargs)
        aliased = len(rest) == 1 and not kwargs and isinstance(rest[0], torch.Tensor)
        return (rest[0] if aliased else original(torch.Tensor, *rest, **kwargs)).as_subclass(cls)

    return staticmethod(__new__)


def custom_function_apply(original: Any) -> classmethod:
    """`torch.autograd.Function.apply` for simulated inputs: the C++ apply builds the function's
    node only for inputs that require grad, which a simulated tensor never does itself (autograd
    lives on its CPU data: tensor.py). So the function runs on the CPU data, where its node joins
    the graph, and its tensor outputs are shown on the inputs' device. Inside its forward the
    tensors are the CPU data: placement there is not checked."""

    def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
        simulated = [leaf for leaf in tree_leaves((args, kwargs)) if is_simulated(leaf)]
        bound = original.__get__(None, cls)
        if not simulated:
            return bound(*args, **kwargs)
        if cls.__module__.startswith(_AOT_AUTOGRAD):  # its forward unwraps subclasses itself
            raise SimulationUnsupported(AOT_WITH_GRAD, f"{cls.__module__}.{cls.__qualname__}.apply")
        unwrap = lambda leaf: real_cpu(leaf) if isinstance(leaf, torch.Tensor) else leaf  # noqa: E731 - a one-line leaf map, as the lambda below
        out = bound(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
        device = simulated[0].device
        return tree_map(lambda leaf: wrap(leaf, device) if isinstance(leaf, torch.Tensor) and leaf.device.type == "cpu" else leaf, out)

    return classmethod(apply)


def node_on_cpu_data(original: type) -> Callable[..., Any]:
    """A C++ autograd node that Python builds and applies itself (gradcheck's `UndefinedGrad`,
    `once_differentiable`'s `DelayedError`): no mode sees the call, so it is applied to the CPU data,
    where autograd lives, and its outputs are shown on the inputs' device."""

    def make(*args: Any) -> Callable[..., Any]:
        node = original(*args)

        def apply(*inputs: Any) -> Any:
            simulated = [leaf for leaf in inputs if is_simulated(leaf)]
            if not simulated:
                return node(*inputs)
            out = node(*(real_cpu(leaf) if is_simulated(leaf) else leaf for leaf in inputs))
            return tree_map(lambda leaf: wrap(leaf, simulated[0].device) if isinstance(leaf, torch.Tensor) else leaf, out)

        return apply

    return make


def cuda_extensions_refused(jit_compile: Callable[..., Any]) -> Callable[..., Any]:
    """torch.utils.cpp_extension's build of an extension at run time (`load`, `load_inline`), while
    a simulation is open: one with CUDA sources (torch's own rule: `with_cuda`, else a .cu or .cuh
    source) would build kernels for the real GPU, which no simulated tensor can run (MONAI's GMM
    layer picks its CUDA sources where `torch.cuda.is_available()`): refused before anything is
    built. A CPU-only build, and any build outside a simulation, is torch's own."""
    parameters = inspect.signature(jit_compile)

    @functools.wraps(jit_compile)
    def refusing_cuda(*args: Any, **kwargs: Any) -> Any:
        if not OPEN_SIMULATIONS:
            return jit_compile(*args, **kwargs)
        call = parameters.bind(*args, **kwargs).arguments
        with_cuda = call.get("with_cuda")
        if with_cuda or (with_cuda is None and any(str(source).endswith((".cu", ".cuh")) for source in call.get("sources") or ())):
            feature = "a CUDA C++ extension built at run time (torch.utils.cpp_extension)"
            raise SimulationUnsupported(feature, f"{call.get('name')}: {caller_summary()}")
        return jit_compile(*args, **kwargs)

    refusing_cuda.simcuda_refuses_cuda = True
    return refusing_cuda


def refuse_cuda_extensions(extensions: ModuleType) -> None:
    """Wrap torch.utils.cpp_extension's builder once a process (the wrapper asks for an open
    simulation at each call, so it stays): importing that module costs an import of setuptools,
    which the simulation does not pay before someone builds."""
    if not getattr(extensions._jit_compile, "simcuda_refuses_cuda", False):
        extensions._jit_compile = cuda_extensions_refused(extensions._jit_compile)


class ExtensionsOnImport(importlib.abc.MetaPathFinder):
    """First on `sys.meta_path` while a simulation is open and torch.utils.cpp_extension is not
    imported yet: the module, once executed, gets the wrapper (MONAI imports it inside its test)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "torch.utils.cpp_extension":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def executed_and_wrapped(module: ModuleType) -> None:
            execute(module)
            refuse_cuda_extensions(module)

        spec.loader.exec_module = executed_and_wrapped  # this spec's own loader object
        return spec


def compiled_frame(original: Callable[..., Any]) -> Callable[..., Any]:
    def refusing_callbacks(callback: Any) -> Any:
        # Dynamo would skip every frame under the dispatch mode and run eagerly without saying so.
        if callable(callback):
            raise SimulationUnsupported("a function compiled before the simulation started (torch.compile outside it)")
        return original(callback)

    return refusing_callbacks


_ABSENT = object()
# cuDNN's real switch, whatever stands in for it later (a simcuda:N test inside the runner).
_REAL_CUDNN_ENABLED = torch._C._get_cudnn_enabled, torch._C._set_cudnn_enabled


class CudnnSwitch:
    """`torch.backends.cudnn.enabled` as the code under test sees and sets it, while cuDNN stays
    off underneath: a composite op picks cuDNN kernels for tensors that report CUDA
    (grid_sampler did), which the CPU data cannot run."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def get(self) -> bool:
        return self.enabled

    def set(self, enabled: bool) -> None:
        self.enabled = bool(enabled)

    def targets(self) -> list[tuple[Any, str, Any]]:
        # torch.backends.cudnn's property holds the C functions it was made with: replaced too.
        return [
            (torch._C, "_get_cudnn_enabled", self.get),
            (torch._C, "_set_cudnn_enabled", self.set),
            (type(torch.backends.cudnn), "enabled", torch.backends.ContextProp(self.get, self.set)),
        ]


@contextlib.contextmanager
def swapped(sim: Simulation, module_functions: bool = True) -> Iterator[None]:
    """Swap every stand-in in, and everything back on exit, whatever happens inside. Without
    `module_functions`, only the stand-ins that are classes' attributes (the tensor's own methods,
    the constructors of torch's CUDA classes) and torch's internals (`torch_internals`, with
    `collection_copies`): a module imported while the simulation is open (pytest collecting a test
    module) keeps torch's own functions in the names it imports (`from torch.cuda import
    current_device`, `@torch.compile`), never a stand-in bound to a simulation that ends before its
    tests run, and what those functions reach is answered or refused as in a test."""
    api = cuda_api(sim)
    targets: list[tuple[Any, str, Any]] = [(torch.cuda, name, value) for name, value in api.items() if not name.startswith("_")]
    targets.append((torch, "compile", simulated_compile(sim.graph_trees, sim.devices)))
    targets.append((torch, "Generator", SimulatedGenerator))
    function = torch.autograd.function.Function
    targets.append((function, "apply", custom_function_apply(function.__dict__["apply"])))
    targets.append((torch.Tensor, "as_subclass", simulated_as_subclass(torch._C.TensorBase.as_subclass)))
    targets.append((torch.Tensor, "__new__", legacy_subclass_new(torch._C.TensorBase.__new__)))
    fake_mode = torch._subclasses.fake_tensor.FakeTensorMode
    targets.append((fake_mode, "from_tensor", fake_from_tensor(fake_mode.__dict__["from_tensor"])))
    # Its binding parses the stream before any mode sees the call: a simulated stream is not a torch.Stream.
    targets.append((torch.Tensor, "record_stream", lambda tensor, stream: sim.streams.record_stream(tensor, stream)))
    targets.append((torch, "load", simulated_load(torch.load)))
    targets.append((torch.jit, "trace", traced_outside(torch.jit.trace)))
    # torch's own functions that hand a tensor's node to C++ (gradient edges, multi-grad hooks).
    graph = torch.autograd.graph
    targets.append((graph, "_get_grad_fn_or_grad_acc", nodes_themselves(graph._get_grad_fn_or_grad_acc)))
    targets.append((torch, "set_default_tensor_type", cuda_default_type_refused(torch.set_default_tensor_type)))
    targets.append((warnings, "warn", warn_naming_the_caller(warnings.warn)))
    targets.append((warnings, "_showwarnmsg", shown_naming_the_caller(warnings._showwarnmsg)))
    targets += [(torch._C._functions, name, node_on_cpu_data(getattr(torch._C._functions, name))) for name in ("UndefinedGrad", "DelayedError")]
    targets += [(torch.accelerator, name, value) for name, value in accelerator_api(sim).items()]
    targets += real_classes_refused()
    if sim.runner is None:  # the runner's own children are its business (runner.py: they inherit the variable)
        targets += fresh_interpreters_refused()
    targets += CudnnSwitch(torch._C._get_cudnn_enabled()).targets()
    if (extensions := sys.modules.get("torch.utils.cpp_extension")) is not None:
        refuse_cuda_extensions(extensions)
    else:
        targets.append((sys, "meta_path", [ExtensionsOnImport(), *sys.meta_path]))
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")  # importing Dynamo here would cost seconds
    if hasattr(eval_frame, "_maybe_set_eval_frame"):  # compiled callables made before the context
        targets.append((eval_frame, "_maybe_set_eval_frame", compiled_frame(eval_frame._maybe_set_eval_frame)))
    if not module_functions:
        targets = [(owner, name, value) for owner, name, value in targets if isinstance(owner, type)] + collection_copies(api)
    targets += torch_internals(sim, api)
    # An attribute this torch release lacks is removed again on exit.
    saved = [(owner, name, owner.__dict__.get(name, _ABSENT)) for owner, name, _ in targets]
    cudnn = _REAL_CUDNN_ENABLED[0]()
    fuses_on_gpu = torch._C._jit_can_fuse_on_gpu()
    try:
        for owner, name, value in targets:
            setattr(owner, name, value)
        # (through the C setter: the Python property refuses once torch.backends.disable_global_flags()
        # ran, as torch's own test utilities do at import)
        _REAL_CUDNN_ENABLED[1](False)
        # TorchScript would build fused CUDA kernels for tensors that report CUDA (libcuda.so). Only
        # the GPU override: switching the TensorExpr fuser itself under a function scripted before
        # the context breaks its cached plan (alias analysis asserts: torchvision's pad_mask).
        torch._C._jit_override_can_fuse_on_gpu(False)
        with loadable():
            yield
    finally:
        torch._C._jit_override_can_fuse_on_gpu(fuses_on_gpu)
        _REAL_CUDNN_ENABLED[1](cudnn)
        for owner, name, value in saved:
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
