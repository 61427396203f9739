"""Every feature the simulated device cannot imitate raises SimulationUnsupported naming it, rather
than running silently on the CPU (a test meeting it is inconclusive, never a pass)."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torchvision

from simcuda import SimulationUnsupported, real_cpu, simulated_cuda
from simcuda.context import simulated_imports
from simcuda.stand_ins import REAL_CLASSES, REAL_INITS
from simcuda.unsupported import is_refusal


def jpeg_bytes(x: torch.Tensor) -> torch.Tensor:
    return torchvision.io.encode_jpeg((x[0].cpu() * 255).to(torch.uint8))


def outcome_of(work: Callable[[], object]) -> object:
    """What `work` returns, or the error it raises (carried back to the test's thread)."""
    try:
        return work()
    except Exception as error:  # noqa: BLE001 - the outcome under test
        return error


def from_another_thread(make: Callable[[], object]) -> Callable[[torch.Tensor], object]:
    """A DataLoader worker thread's call: modes are thread-local, so it would reach real CUDA."""

    def call(x: torch.Tensor) -> object:
        outcome: list[object] = []
        thread = threading.Thread(target=lambda: outcome.append(outcome_of(make)))
        thread.start()
        thread.join()
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]

    return call


def spawned_loader(method: str) -> Callable[[torch.Tensor], object]:
    """A DataLoader whose workers are fresh interpreters: they would reach real CUDA."""
    return lambda x: next(iter(torch.utils.data.DataLoader(range(2), num_workers=1, multiprocessing_context=method)))


FEATURES: dict[str, tuple[Callable[[torch.Tensor], object], str]] = {
    "CUDAGraph": (lambda x: torch.cuda.CUDAGraph(), "CUDA graphs"),
    "torch.cuda.graph": (lambda x: torch.cuda.graph(None), "CUDA graphs"),
    "make_graphed_callables": (lambda x: torch.cuda.make_graphed_callables(torch.sin, (x,)), "CUDA graphs"),
    "encode_jpeg on cuda": (lambda x: torchvision.io.encode_jpeg((x[0] * 255).to(torch.uint8)), "nvJPEG"),
    "decode_jpeg on cuda": (lambda x: torchvision.io.decode_jpeg(jpeg_bytes(x), device="cuda"), "nvJPEG"),
    "factory in another thread": (from_another_thread(lambda: torch.zeros(2, device="cuda:1")), "CUDA used from another thread"),
    "CUDA generator": (lambda x: torch.Generator(device="cuda"), "torch.Generator"),
    "growing a tensor in place": (lambda x: x.flatten().resize_(10_000), "growing a simulated tensor"),
    "event timing": (lambda x: torch.cuda.Event(enable_timing=True).elapsed_time(torch.cuda.Event()), "event timing"),
    "spawned DataLoader workers": (spawned_loader("spawn"), "a process started with spawn"),
    "forkserver DataLoader workers": (spawned_loader("forkserver"), "a process started with forkserver"),
    # torch's own classes, reached past the simulation's stand-ins (their own modules; a name
    # imported before it opened): the real CUDA's driver error here, a real stream or graph on a GPU.
    "torch.cuda.graphs.CUDAGraph": (lambda x: torch.cuda.graphs.CUDAGraph(), "CUDA graphs"),
    "torch's own stream class": (lambda x: torch.cuda.streams.Stream(), "a CUDA stream of torch's own class"),
    "ExternalStream": (lambda x: torch.cuda.ExternalStream(0), "a CUDA stream of torch's own class"),
    "torch's own event class": (lambda x: torch.cuda.streams.Event().record(), "a CUDA event of torch's own class"),
    # The caching allocator's raw memory and the allocator itself (a TypeError, a real free, a
    # real allocator changed for the process), and NVML's reading of a real GPU.
    "caching_allocator_alloc": (lambda x: torch.cuda.caching_allocator_alloc(16), "raw memory of the CUDA caching allocator"),
    "caching_allocator_delete": (lambda x: torch.cuda.caching_allocator_delete(0), "raw memory of the CUDA caching allocator"),
    "change_current_allocator": (
        lambda x: torch.cuda.memory.change_current_allocator(SimpleNamespace(allocator=object)),
        "a pluggable CUDA allocator",
    ),
    "NVML": (lambda x: torch.cuda.utilization(), "NVML queries of a real GPU"),
    "MemPool": (lambda x: torch.cuda.MemPool(), "a CUDA memory pool"),
}


@pytest.mark.parametrize(("call", "named"), FEATURES.values(), ids=FEATURES.keys())
def test_unsupported_feature_is_refused_by_name(call: Callable[[torch.Tensor], object], named: str) -> None:
    with simulated_cuda():
        x = torch.rand(1, 3, 16, 16, device="cuda:1")
        with pytest.raises(SimulationUnsupported, match=named):
            call(x)


# What a test module's import meets while pytest collects it (context.simulated_imports, where
# torch.cuda's public names stay torch's own): refused by name as inside a test, never the real
# CUDA's lazy init (here "Found no NVIDIA driver", a collection error; on a GPU machine, the real
# GPU started and read) nor the figure torch gives before CUDA starts (memory_allocated() 0).
AT_COLLECTION: dict[str, tuple[Callable[[], object], str]] = {
    "memory_allocated": (lambda: torch.cuda.memory_allocated(), "memory_allocated"),
    "memory_stats of a device": (lambda: torch.cuda.memory_stats(0), "CUDA memory statistics"),
    "memory_snapshot": (lambda: torch.cuda.memory_snapshot(), "CUDA memory statistics"),
    "host_memory_stats": (lambda: torch.cuda.host_memory_stats(), "CUDA memory statistics"),
    "mem_get_info": (lambda: torch.cuda.mem_get_info(), "torch.cuda.memory.mem_get_info"),
    "CUDAGraph": (lambda: torch.cuda.CUDAGraph(), "CUDA graphs"),
    "Stream": (lambda: torch.cuda.Stream(), "a CUDA stream of torch's own class"),
    "Event": (lambda: torch.cuda.Event(), "a CUDA event of torch's own class"),
    "MemPool": (lambda: torch.cuda.MemPool(), "a CUDA memory pool"),
    "current_device": (lambda: torch.cuda.current_device(), "torch.cuda.current_device"),
    "synchronize": (lambda: torch.cuda.synchronize(), "torch.cuda.synchronize"),
    "init": (lambda: torch.cuda.init(), "torch.cuda.init"),
    "get_rng_state": (lambda: torch.cuda.get_rng_state(), "torch.cuda.random.get_rng_state"),
    "get_rng_state_all": (lambda: torch.cuda.get_rng_state_all(), "torch.cuda.random.get_rng_state"),
    "caching_allocator_delete": (lambda: torch.cuda.caching_allocator_delete(0), "raw memory of the CUDA caching allocator"),
}


@pytest.mark.parametrize(("call", "named"), AT_COLLECTION.values(), ids=AT_COLLECTION.keys())
def test_at_collection_a_cuda_entry_point_is_refused_by_name(call: Callable[[], object], named: str) -> None:
    with simulated_imports(2, 1), pytest.raises(SimulationUnsupported, match=named):
        call()


def real_cuda_started() -> None:
    """The real CUDA as an earlier test of the process leaves it: started. C++ remembers a lazy init
    that returned and never asks `torch.cuda._lazy_init` again (torch/csrc/utils/device_lazy_init.cpp).
    Without a GPU, a lazy init that returns once leaves the same mark; the call it let through gets
    the driver's answer."""
    if torch.cuda.is_available():
        torch.cuda.init()
        return
    lazy_init = torch.cuda._lazy_init
    torch.cuda._lazy_init = lambda: None
    try:
        torch.empty(1, device="cuda")
    except RuntimeError:
        pass  # "Found no NVIDIA driver" (or "not compiled with CUDA"): the mark is left all the same
    finally:
        torch.cuda._lazy_init = lazy_init


PAST_THE_LAZY_INIT = {
    **{name: FEATURES[name] for name in ("factory in another thread", "MemPool")},
    # Its device is positional at the function level: the dispatch-level guard refuses the copy.
    "a move in another thread": (from_another_thread(lambda: torch.ones(1).to("cuda:1")), "CUDA used from another thread"),
    # Its copy to the device runs beneath the dispatcher: the function-level guard refuses it.
    "torch.tensor in another thread": (from_another_thread(lambda: torch.tensor([1.0], device="cuda:1")), "CUDA used from another thread"),
}
SIMULATIONS = {"in a test": simulated_cuda, "at collection": lambda: simulated_imports(2, 1)}


@pytest.mark.isolated(group="the real CUDA started")  # the mark lasts as long as the process
@pytest.mark.parametrize("simulation", SIMULATIONS.values(), ids=SIMULATIONS.keys())
@pytest.mark.parametrize(("call", "named"), PAST_THE_LAZY_INIT.values(), ids=PAST_THE_LAZY_INIT.keys())
def test_once_the_real_cuda_started_what_no_lazy_init_reaches_is_still_refused(
    simulation: Callable[[], Any], call: Callable[[torch.Tensor], object], named: str
) -> None:
    """Where an earlier test started the real CUDA, C++ no longer asks the lazy init, which refuses
    where it never started: a worker thread's factory and a memory pool's constructor went on to
    the real GPU (one H200 under -n 8: CUDA's invalid ordinal for cuda:1; a pool made for real)."""
    real_cuda_started()
    with simulation():
        x = torch.rand(1, 3, 16, 16, device="cuda:1")
        with pytest.raises(SimulationUnsupported, match=named):
            call(x)


def in_a_thread_started_inside(work: Callable[[], object], after_the_simulation: bool = False) -> object:
    """What `work` returns, or the error it raises, run in a thread started inside a simulation:
    while it is open, or once it has ended."""
    outcome: list[object] = []
    released = threading.Event()

    def run() -> None:
        released.wait()
        outcome.append(outcome_of(work))

    with simulated_cuda():
        thread = threading.Thread(target=run)
        thread.start()
        if not after_the_simulation:
            released.set()
            thread.join()
    released.set()
    thread.join()
    return outcome[0]


def pinned_for_cuda() -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the `device` argument, which older DataLoaders pass
        return torch.ones(2).pin_memory("cuda").is_pinned()


def compiled_frames() -> int:
    from torch._dynamo.testing import CompileCounter  # Dynamo, for this test only

    counter = CompileCounter()
    torch.compile(lambda x: x + 1, backend=counter)(torch.ones(2))
    return counter.frame_count


def fake_cuda_numel() -> int:
    from torch._subclasses.fake_tensor import FakeTensorMode  # fake tensors, for this test only

    with FakeTensorMode():
        return (torch.empty(2, device="cuda") + 1).numel()


@pytest.mark.isolated(group="the real CUDA started")
def test_once_the_real_cuda_started_a_guarded_thread_lets_through_what_touches_no_cuda() -> None:
    """The guard refuses only what would reach the real CUDA: pinning for CUDA (the pin thread's
    kernels answer it), fake CUDA tensors (FakeTensorMode touches no device) pass while the
    simulation is open; once it has ended the thread reaches torch's own CUDA again (here the
    driver's answer, never a refusal) and compiles as any thread does."""
    real_cuda_started()
    assert in_a_thread_started_inside(pinned_for_cuda) is True
    assert in_a_thread_started_inside(fake_cuda_numel) == 2
    after = in_a_thread_started_inside(lambda: torch.zeros(1, device="cuda:1"), after_the_simulation=True)
    assert not isinstance(after, SimulationUnsupported), after
    assert in_a_thread_started_inside(compiled_frames, after_the_simulation=True) == 1


def test_a_thread_started_inside_runs_cpu_work_and_pins_as_before() -> None:
    """The guard of a thread started inside refuses only what would reach the real CUDA: CPU work
    and the pin thread's pinning run as without it (a refusal would be the outcome instead)."""
    assert in_a_thread_started_inside(lambda: (torch.ones(2, device="cpu") + 1).sum().item()) == 4.0
    assert in_a_thread_started_inside(lambda: torch.ones(2).pin_memory().is_pinned()) is True


def test_at_collection_a_seed_never_reaches_a_real_cuda_an_earlier_test_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU machine an earlier test in the process may have started the real CUDA; torch then
    runs a seeding callback at once, where it queues it on a machine whose CUDA never started (one
    H200 under -n 8: the simulated device count over the real generators, an IndexError). torch's
    own flag stands for the started CUDA here; the callback reaches neither CUDA, as on a CPU."""
    monkeypatch.setattr(torch.cuda, "_initialized", True)
    with simulated_imports(2, 1) as simulation:
        torch.manual_seed(0)
        torch.cuda.manual_seed_all(1)
    assert simulation.refusals == []


def test_at_collection_what_needs_no_real_cuda_is_answered_as_in_a_test() -> None:
    """Its twin: a case list made under `torch.cuda.device(0)`, seeds, the cache emptied and the
    capture asked about run on the simulated devices, refusing nothing; the names stay torch's."""
    with simulated_imports(2, 1) as simulation:
        with torch.cuda.device(0):
            on_0 = torch.ones(2, device="cuda")
        torch.manual_seed(0)
        torch.cuda.empty_cache()
        assert not torch.cuda.is_current_stream_capturing()
        assert on_0.device == torch.device("cuda:0") and torch.ones(1, device="cuda").device == torch.device("cuda:1")
        assert torch.cuda.current_device.__module__ == "torch.cuda" and simulation.refusals == []


def test_a_compiled_function_made_before_the_context_is_refused() -> None:
    """Dynamo would skip every frame under the dispatch mode and run eagerly without a word; one
    compiled inside the simulation runs there (tests/simcuda/test_simcuda_graphs.py)."""
    compiled = torch.compile(torch.sin, backend="eager")
    compiled(torch.zeros(1))  # Dynamo imported and the function compiled outside
    with simulated_cuda(), pytest.raises(SimulationUnsupported, match="compiled before the simulation started"):
        compiled(torch.zeros(1, device="cuda:1"))


def test_supported_neighbours_still_run() -> None:
    """The refusals are narrow: autograd (tests/simcuda/test_simcuda_autograd.py), streams, events, CPU generators run."""
    with simulated_cuda():
        x = torch.rand(3, device="cuda:1", requires_grad=True)
        assert (x * 2).requires_grad
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            torch.cuda.current_stream().synchronize()
        torch.cuda.Event().record()
        torch.cuda.synchronize()
        assert isinstance(torch.Generator(), torch.Generator)
        assert torch.rand(2, generator=torch.Generator().manual_seed(0)).shape == (2,)


# torchvision's nms has a CUDA kernel that takes float16 and a CPU kernel that does not: on the
# simulated device the CPU kernel's dtype error would be a false alarm, so it is a refusal naming
# the op and the dtype. Its twins: float32 runs as on the CPU, and an op with no CUDA kernel at
# all still fails with the CPU kernel's error (a real GPU fails on it too).
BOXES = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [2.0, 2.0, 3.0, 3.0]])
SCORES = torch.tensor([0.9, 0.5, 0.7])


def test_a_dtype_only_the_cuda_kernel_has_is_refused_naming_op_and_dtype() -> None:
    with simulated_cuda(2), pytest.raises(SimulationUnsupported, match=r"torchvision::nms.*Half"):
        torchvision.ops.nms(BOXES.half().to("cuda:1"), SCORES.half().to("cuda:1"), 0.5)


def test_the_same_op_in_a_dtype_both_kernels_have_runs_as_on_the_cpu() -> None:
    expected = torchvision.ops.nms(BOXES, SCORES, 0.5)
    with simulated_cuda(2):
        kept = torchvision.ops.nms(BOXES.to("cuda:1"), SCORES.to("cuda:1"), 0.5)
        assert kept.device == torch.device("cuda:1") and torch.equal(kept.cpu(), expected)


def test_a_cpu_dtype_error_of_an_op_without_a_cuda_kernel_still_fails() -> None:
    with torch.library._scoped_library("simcuda_test", "FRAGMENT") as library:
        library.define("halfless(Tensor x) -> Tensor")

        def cpu_kernel(x: torch.Tensor) -> torch.Tensor:
            if x.dtype == torch.half:
                raise RuntimeError("\"halfless\" not implemented for 'Half'")
            return x.clone()

        library.impl("halfless", cpu_kernel, "CPU")
        with simulated_cuda(2), pytest.raises(RuntimeError, match="not implemented for 'Half'"):
            torch.ops.simcuda_test.halfless(torch.ones(2, dtype=torch.half, device="cuda:1"))


def test_a_cuda_entry_point_without_a_stand_in_is_refused_by_its_name() -> None:
    """A torch.cuda function that starts CUDA and has no stand-in (peer access: a fact of the real
    GPUs' topology) is refused naming that function, not only "a CUDA entry point"."""
    with simulated_cuda(2), pytest.raises(SimulationUnsupported, match=r"torch\.cuda\.can_device_access_peer"):
        torch.cuda.can_device_access_peer(0, 1)


@pytest.mark.parametrize("name", ["encode_jpeg on cuda", "decode_jpeg on cuda"])
def test_nvjpeg_is_refused_before_its_kernel_runs(name: str) -> None:
    """On a GPU machine torchvision's nvJPEG kernels run before the dispatch mode sees the op and
    reach the real CUDA ("invalid device ordinal", "data is not allocated yet": seen on an H200,
    reports/observed/2026-11-27-nvidia-h200/probe-log.txt): the function mode refuses the
    operator itself, so no C++ below it ran."""
    call, named = FEATURES[name]
    with simulated_cuda():
        x = torch.rand(1, 3, 16, 16, device="cuda:1")
        with pytest.raises(SimulationUnsupported, match=named) as refused:
            call(x)
    assert refused.traceback[-1].path.name == "functions.py", refused.traceback[-1]


GUARDED_ANSWERS = {
    "invalid ordinal on a GPU machine": "CUDA error: invalid device ordinal\nGPU device may be out of range, do you have enough GPUs?",
    "stub driver": "CUDA error: CUDA driver version is insufficient for CUDA runtime version",
    "storage read from C++": "Error while decoding JPEG images: The tensor has a non-zero number of elements, but its data is not allocated yet.",
}


@pytest.mark.parametrize("text", GUARDED_ANSWERS.values(), ids=GUARDED_ANSWERS.keys())
def test_the_real_cudas_answers_to_an_unseen_binding_are_refusals_inside_a_simulation_only(text: str) -> None:
    """Outside a simulation they are a real GPU's own errors (a direct test's to judge), and the
    simulation's own invalid ordinal (a device past the simulated count) is a finding, not a refusal."""
    assert not is_refusal(RuntimeError(text))
    with simulated_cuda():
        assert is_refusal(RuntimeError(text))
        assert not is_refusal(RuntimeError("CUDA error: invalid device ordinal"))


def attention(device: str) -> torch.Tensor:
    torch.manual_seed(0)
    block = torch.nn.MultiheadAttention(8, 2).to(device)
    x = torch.rand(4, 1, 8).to(device)  # (sequence, batch, features): a shape whose path calls .contiguous()
    return block(x, x, x)[0]


def fractional_pool(device: str) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.nn.functional.fractional_max_pool2d(torch.rand(1, 2, 8, 8).to(device), 2, output_size=(4, 4))


# Python-level torch functions whose bodies make tensors, or call a guarded binding, on their
# input's device: `.contiguous()` in F.multi_head_attention_forward, `torch.tensor(device=)` in
# unravel_index, random samples in fractional_max_pool2d, `torch.randn(device=)` in svd_lowrank.
PYTHON_LEVEL = {
    "multi_head_attention_forward": attention,
    "unravel_index": lambda device: torch.stack(torch.unravel_index(torch.tensor([5, 7, 11]).to(device), (3, 4))),
    "fractional_max_pool2d": fractional_pool,
    "svd_lowrank": lambda device: torch.svd_lowrank(torch.eye(6, 4).to(device), q=2, niter=0)[1],
}
REDISPATCH = hasattr(torch.overrides, "redispatch_function")


@pytest.mark.parametrize("name", PYTHON_LEVEL)
def test_a_python_level_torch_function_runs_inside_the_simulation(name: str) -> None:
    """torch runs a mode's handler with the mode popped, so a Python-level function the function
    mode hands on would make its tensors, or open its device guards, unseen: the real CUDA's lazy
    init (refused) or its driver (torch 2.14's MultiheadAttention on PyTorch Geometric's attention
    blocks). Where torch can re-enter the mode for the body (torch.overrides.redispatch_function,
    torch >= 2.14), it runs simulated and gives the CPU's values (float rounding apart: attention
    takes its backend by device); before, it is refused, or runs where no unseen call reaches
    CUDA (torch 2.11's attention)."""
    call = PYTHON_LEVEL[name]
    expected = call("cpu")
    with simulated_cuda():
        try:
            out = call("cuda:1")
        except RuntimeError as error:  # SimulationUnsupported, torch.AcceleratorError, the driver's
            assert not REDISPATCH and is_refusal(error), error
            return
        assert out.device == torch.device("cuda:1")
        torch.testing.assert_close(real_cpu(out), expected)


def test_a_device_mix_inside_a_python_level_function_is_still_a_finding() -> None:
    """The twin a real GPU fails too: attention of a cuda:1 query against CPU keys raises
    TensorIterator's device error inside F.multi_head_attention_forward, not a refusal."""
    with simulated_cuda():
        block = torch.nn.MultiheadAttention(8, 2, batch_first=True).to("cuda:1")
        query, keys = torch.rand(2, 4, 8, device="cuda:1"), torch.rand(2, 4, 8)
        with pytest.raises(RuntimeError) as raised:
            block(query, keys, keys)
        assert not is_refusal(raised.value), raised.value
        if REDISPATCH:
            assert "Expected all tensors to be on the same device" in str(raised.value)


def test_a_cuda_default_tensor_type_is_refused_before_it_is_set() -> None:
    """C++ would keep a CUDA default tensor type past the simulation, and every later factory of
    the process would reach the real CUDA: refused before anything is set."""
    with simulated_cuda(), pytest.raises(SimulationUnsupported, match="CUDA default tensor type"):
        torch.set_default_tensor_type(torch.cuda.FloatTensor)
    assert torch.zeros(1).device == torch.device("cpu")


def test_the_lazy_init_stand_in_never_returns() -> None:
    """C++ remembers a `torch.cuda._lazy_init` that returned for the whole process: every later
    factory, in any thread and after the simulation, would go to the real CUDA. So the stand-in
    refuses."""
    with simulated_cuda(), pytest.raises(SimulationUnsupported, match="CUDA entry point"):
        torch.cuda._lazy_init()


def test_a_factory_in_another_thread_is_refused_after_a_refused_lazy_init() -> None:
    """... and after a refused lazy init the next simulation still refuses a factory in another
    thread (where an earlier test started the real CUDA too: the thread's own guard refuses it)."""
    with simulated_cuda(), pytest.raises(SimulationUnsupported, match="CUDA entry point"):
        torch.cuda._lazy_init()
    with simulated_cuda(), pytest.raises(SimulationUnsupported, match="another thread"):
        from_another_thread(lambda: torch.zeros(1, device="cuda:1"))(torch.zeros(1, device="cuda:1"))


def test_a_cuda_extension_built_at_run_time_is_refused_before_it_is_built(tmp_path) -> None:
    """MONAI's GMM layer builds its extension from CUDA sources where `torch.cuda.is_available()`:
    kernels for the real GPU, which no simulated tensor can run ("Error building extension" on a
    CPU machine). Refused by name before any build; a CPU-only build inside, and a CUDA one outside
    a simulation, are torch's own (here each fails on its absent first source, as torch fails it)."""
    from torch.utils import cpp_extension

    cuda_sources = [str(tmp_path / "gmm.cpp"), str(tmp_path / "gmm_cuda.cu")]
    with simulated_cuda(), pytest.raises(SimulationUnsupported, match=r"a CUDA C\+\+ extension built at run time"):
        cpp_extension.load(name="simcuda_gmm", sources=cuda_sources, build_directory=str(tmp_path))
    with simulated_cuda(), pytest.raises(FileNotFoundError, match="absent.cpp"):
        cpp_extension.load(name="simcuda_cpu", sources=[str(tmp_path / "absent.cpp")], build_directory=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="gmm.cpp"):
        cpp_extension.load(name="simcuda_gmm_outside", sources=cuda_sources, build_directory=str(tmp_path))


def test_the_extension_builder_imported_inside_a_simulation_refuses_too() -> None:
    """MONAI imports torch.utils.cpp_extension inside its first GMM test: the import system hands
    the builder its wrapper as the module is executed."""
    import importlib.util

    from simcuda.stand_ins import ExtensionsOnImport

    spec = ExtensionsOnImport().find_spec("torch.utils.cpp_extension", torch.utils.__path__)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    assert getattr(fresh._jit_compile, "simcuda_refuses_cuda", False)
    assert ExtensionsOnImport().find_spec("torch.utils.data", torch.utils.__path__) is None


def test_a_refusal_a_dataloader_worker_raised_again_is_logged_by_its_feature() -> None:
    """DataLoader's reraise builds the error anew from the worker's whole traceback text: the log
    held that text, the summary a feature per DataLoader traceback."""
    from torch._utils import ExceptionWrapper  # the wrapper DataLoader's workers send back

    with simulated_cuda() as simulation:
        try:
            raise SimulationUnsupported("torch.Generator(device='cuda')", "in a worker")
        except SimulationUnsupported:
            wrapped = ExceptionWrapper(sys.exc_info(), where="in DataLoader worker process 0")
        with pytest.raises(SimulationUnsupported, match="Caught SimulationUnsupported in DataLoader worker process 0"):
            wrapped.reraise()
    assert simulation.refusals == ["torch.Generator(device='cuda')", "torch.Generator(device='cuda') (in a worker)"]


def test_each_class_refused_by_its_constructor_has_a_new_of_its_own() -> None:
    """The simulation swaps `__new__` (or `__init__`) and puts it back; on a class without one of its
    own, taking the swapped one away leaves CPython's slot on object.__new__ ("takes exactly one
    argument"): a torch whose class lost its own must fail here, not break that class after every
    simulation."""
    lacking = [cls.__qualname__ for cls in REAL_CLASSES if "__new__" not in vars(cls)]
    assert lacking + [cls.__qualname__ for cls in REAL_INITS if "__init__" not in vars(cls)] == []
