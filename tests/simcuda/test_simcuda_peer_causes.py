"""Each cause of a false alarm or refusal found by running kornia's own test suite on the simulated
device (bench/simcuda_peer_suite.py), as the smallest call that showed it: the simulated run must
equal the CPU run, and stay on the simulated device."""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import pickle
import warnings

import pytest
import torch
from torch import nn

from simcuda import SimulationUnsupported, gpu_type, gpu_vars, is_simulated, real_cpu, simulated_cuda

DEVICE = torch.device("cuda:1")


def both(body) -> tuple:
    """body(device) on the CPU and on the simulated cuda:1; the simulated result read back."""
    expected = body(torch.device("cpu"))
    with simulated_cuda(2):
        got = body(DEVICE)
        on_device = [value.device == DEVICE for value in (got if isinstance(got, tuple) else (got,)) if isinstance(value, torch.Tensor)]
        got = tuple(real_cpu(value) for value in got) if isinstance(got, tuple) else real_cpu(got)
    assert all(on_device)
    return expected, got


def test_conjugate_and_negative_bits_are_honoured() -> None:
    """A mode's handler runs below the Conjugate / Negative keys: without them `a * b.conj()`
    computed `a * b` (kornia's FFT-based filters)."""

    def body(device: torch.device) -> tuple:
        a = torch.tensor([1 + 2j, 3 - 1j], device=device)
        b = torch.tensor([2 - 1j, 1 + 1j], device=device)
        return a * b.conj(), (a.conj().imag + 1), torch._neg_view(b.real) * 2

    expected, got = both(body)
    assert all(torch.equal(e, g) for e, g in zip(expected, got))


def test_a_conjugate_view_assigned_to_data_is_honoured() -> None:
    """A wrapper mirrors its data's bits when made (every op reads them); `.data =` changes the
    data, and the bits with it, as on a GPU (`is_conj()` True after it)."""

    def body(device: torch.device) -> tuple:
        holder = torch.zeros(2, dtype=torch.complex64, device=device)
        holder.data = torch.tensor([1 + 2j, 3 - 1j], device=device).conj()
        return holder * 2, holder.is_conj()

    expected, got = both(body)
    assert torch.equal(expected[0], got[0]) and expected[1] is got[1] is True, (expected, got)


def test_torchscript_runs_without_building_cuda_fusion_kernels() -> None:
    """TorchScript's profiling executor builds fused CUDA kernels for tensors that report CUDA
    after a few runs (libcuda.so); inside, its GPU fusers are off."""

    @torch.jit.script
    def fused(x: torch.Tensor) -> torch.Tensor:
        return (x * 2 + 1).sigmoid() * x

    def body(device: torch.device) -> torch.Tensor:
        x = torch.linspace(-1, 1, 8, device=device)
        return [fused(x) for _ in range(4)][-1]

    expected, got = both(body)
    assert torch.equal(expected, got)


def test_a_function_scripted_before_the_simulation_runs_inside_it() -> None:
    """torchvision's TestPad::test_kernel_mask scripts `pad_mask` outside the simulation and runs it
    inside: TorchScript's alias analysis asserted ("Value %fill... wasn't found"), because the
    simulation switched the TensorExpr fuser off and on around each test under the function's
    cached plan. Only the GPU fusion override is set now. Twin: the plain run of the same calls."""
    from torchvision.transforms.v2 import functional as F

    scripted = torch.jit.script(F.pad_mask)
    mask = torch.randint(0, 2, (3, 8, 8), dtype=torch.uint8)
    expected = [F.pad_mask(mask, padding=padding) for padding in ([1], [1, 2], [1, 2, 3, 4])]
    with simulated_cuda(2):
        got = [scripted(mask, padding=padding) for _ in range(3) for padding in ([1], [1, 2], [1, 2, 3, 4])]
    assert all(torch.equal(value, expected[index % 3]) for index, value in enumerate(got))


@pytest.mark.parametrize(
    "key",
    [
        (0, 1),  # a tuple key
        (slice(None), [0, 2]),  # a slice and an index list
        [slice(0, 2), slice(1, 3)],  # a list of slices, read as a tuple
        (Ellipsis, None, 1),
    ],
    ids=["tuple", "slice-and-list", "list-of-slices", "ellipsis-none"],
)
def test_index_keys_read_as_on_cuda(key: object) -> None:
    def body(device: torch.device) -> torch.Tensor:
        return torch.arange(12.0, device=device).reshape(3, 4)[key]

    expected, got = both(body)
    assert torch.equal(expected, got)


def test_zero_dim_tensors_bound_a_slice() -> None:
    """`x[t0:t1] = 1` with 0-dim simulated tensors as the bounds (kornia's boxes.to_mask): read
    through the dispatcher, never through the bounds' own `__index__` binding."""

    def body(device: torch.device) -> torch.Tensor:
        x = torch.zeros(5, 4, device=device)
        start, stop = torch.tensor(1, device=device), torch.tensor(3, device=device)
        x[start:stop, start] = 1.0
        return x[start:]

    expected, got = both(body)
    assert torch.equal(expected, got)


def test_save_and_load_round_trip_with_map_location() -> None:
    with simulated_cuda(2):
        x = torch.rand(3, device=DEVICE)
        buffer = io.BytesIO()
        torch.save({"x": x}, buffer)
        buffer.seek(0)
        back = torch.load(buffer, map_location="cuda:1")["x"]
        buffer.seek(0)
        # map_location and pickle_module by position, as torch.load's second and third arguments
        by_position = torch.load(buffer, "cuda:1", pickle, weights_only=False)["x"]
        buffer.seek(0)
        on_cpu = torch.load(buffer, map_location="cpu")["x"]
        assert is_simulated(back) and back.device == DEVICE and torch.equal(real_cpu(back), real_cpu(x))
        assert is_simulated(by_position) and by_position.device == DEVICE and torch.equal(real_cpu(by_position), real_cpu(x))
        assert not is_simulated(on_cpu) and torch.equal(on_cpu, real_cpu(x))


@pytest.mark.parametrize("weights_only", [True, False])
def test_a_file_saved_by_simcuda_0_2_5_loads(weights_only: bool) -> None:
    """simcuda 0.2.5 and earlier saved a simulated tensor as a call of
    `simcuda.serialization.rebuild_simulated` (now `simcuda.tensor.rebuild_simulated`): such a
    file loads, by torch's weights-only unpickler and by plain pickle alike."""
    with simulated_cuda(2):
        x = torch.rand(3, device=DEVICE)
        buffer = io.BytesIO()
        torch.save(x, buffer, _use_new_zipfile_serialization=False)  # a plain pickle stream: its names readable
        saved = buffer.getvalue()
        assert b"simcuda.tensor\nrebuild_simulated\n" in saved
        old = saved.replace(b"simcuda.tensor\nrebuild_simulated\n", b"simcuda.serialization\nrebuild_simulated\n")
        back = torch.load(io.BytesIO(old), weights_only=weights_only)
        assert is_simulated(back) and back.device == DEVICE and torch.equal(real_cpu(back), real_cpu(x))


def test_module_to_with_keywords_and_deepcopy() -> None:
    """`Module.to(device=..., dtype=...)` (parsed by `_parse_to`, which makes no tensor) and
    `copy.deepcopy` of a module and a tensor on the simulated device."""
    with simulated_cuda(2):
        net = nn.Linear(3, 2).to(device="cuda:1", dtype=torch.float64)
        twin = copy.deepcopy(net)
        tensor = copy.deepcopy(net.weight.detach())
        assert net.weight.device == twin.weight.device == tensor.device == DEVICE and twin.weight.dtype == torch.float64
        assert twin.weight is not net.weight and torch.equal(real_cpu(twin.weight), real_cpu(net.weight))


def test_gradcheck_runs_its_undefined_gradient_check() -> None:
    """gradcheck applies autograd's C++ `UndefinedGrad` node to the outputs itself (no mode sees
    it): it is applied to the CPU data (kornia's gradcheck tests)."""
    with simulated_cuda(2):
        x = torch.rand(2, 3, device=DEVICE, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t: (t.sin() * t).sum(dim=1), (x,))


def test_a_conjugate_view_says_so_and_resolves_as_on_cuda() -> None:
    def body(device: torch.device) -> tuple:
        view = torch.tensor([1 + 2j, 3 - 1j], device=device).conj()
        assert view.is_conj() and not view.resolve_conj().is_conj()
        return view.resolve_conj(), view.real, view.imag, view.sin(), torch.view_as_real(view.resolve_conj())

    expected, got = both(body)
    assert all(torch.equal(e, g) for e, g in zip(expected, got))


def test_numpy_with_force_copies_to_the_host_as_on_cuda() -> None:
    """`Tensor.numpy(force=True)` is detach, cpu, resolve the conjugate and negative bits, numpy
    (torchvision's to_pil_image uses it); without force a CUDA tensor is refused, as here."""

    def body(device: torch.device) -> tuple:
        x = torch.tensor([[1.0, -2.0], [3.0, 4.5]], device=device, requires_grad=True)
        z = torch.tensor([1 + 2j, 3 - 1j], device=device).conj()
        return torch.from_numpy((x * 2).numpy(force=True)), torch.from_numpy(z.numpy(force=True))

    expected, got = both(lambda device: tuple(value.to(device) for value in body(device)))
    assert all(torch.equal(e, g) for e, g in zip(expected, got))
    with simulated_cuda(2), pytest.raises(TypeError, match="can't convert cuda:1 device type tensor to numpy"):
        torch.ones(2, device=DEVICE).numpy()


def test_to_another_tensor_of_a_tvtensor_class_under_its_return_type() -> None:
    """`t.to(boxes)` moves t to boxes' device and dtype; under torchvision's
    set_return_type("TVTensor") the simulation's argument parsing must not hand the parse itself to
    the TVTensor's __torch_function__ (which would wrap a device as boxes). Twin: a real device bug
    in the same context still fails."""
    from torchvision import tv_tensors

    boxes = tv_tensors.BoundingBoxes(torch.tensor([[0.0, 0.0, 2.0, 2.0]]), format="XYXY", canvas_size=(4, 4))

    def body(device: torch.device) -> torch.Tensor:
        with tv_tensors.set_return_type("TVTensor"):
            return torch.zeros(1, 4, dtype=torch.float64).to(boxes.to(device)) + 1

    expected, got = both(body)
    assert torch.equal(expected.as_subclass(torch.Tensor), got.as_subclass(torch.Tensor))
    with (
        simulated_cuda(2),
        tv_tensors.set_return_type("TVTensor"),
        pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"),
    ):
        torch.zeros(1, 4).to(boxes.to(DEVICE)) + torch.ones(4)


@pytest.mark.parametrize("non_blocking", [False, True], ids=["blocking", "non_blocking"])
def test_a_tvtensor_moved_back_to_the_cpu_is_a_cpu_tvtensor(non_blocking: bool) -> None:
    """`image.to("cpu")` of a TVTensor on the device: torchvision re-wraps the CPU result in the
    class it was called on (TVTensor._wrap_output), which inside the simulation is the simulated
    twin; the result must be the CPU TVTensor it is on a GPU, not a twin without its data (found by
    the torchvision stream sweep: every op on an Image or Mask brought back raised). Twin: read
    before the stream is synchronized, the non-blocking copy is still a race."""
    from torchvision import tv_tensors

    from simcuda import StreamRace

    samples = (tv_tensors.Image(torch.rand(3, 4, 4)), tv_tensors.Mask(torch.ones(4, 4)),
               tv_tensors.BoundingBoxes(torch.tensor([[0.0, 1.0, 2.0, 3.0]]), format="XYXY", canvas_size=(4, 4)))
    with simulated_cuda(2):
        for sample in samples:
            moved = sample.pin_memory().to(DEVICE).to("cpu", non_blocking=non_blocking)
            torch.cuda.current_stream(DEVICE).synchronize()
            assert (type(moved), moved.device, gpu_vars(moved)) == (type(sample), torch.device("cpu"), vars(sample))
            assert torch.equal(moved.sum(), sample.sum()) and torch.equal(moved.as_subclass(torch.Tensor), sample.as_subclass(torch.Tensor))
    if non_blocking:
        with simulated_cuda(2), pytest.raises(StreamRace, match="read by aten::sum on the host"):
            samples[0].pin_memory().to(DEVICE).to("cpu", non_blocking=True).sum()


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_aot_autograd_on_a_simulated_tensor_that_requires_grad_is_refused_by_name(dynamic: bool) -> None:
    """Issue 29, cause 8: AOTAutograd (`aot_function`, `torch.library.opcheck`'s aot_dispatch
    tests) handles a tensor subclass by putting autograd on the wrapper, where the simulation keeps
    it on the CPU data (tensor.py): with an input that requires grad it failed deep inside (an
    AssertionError of its subclass wrapper, "the callback you passed in doesn't detach"). It is a
    refusal naming the feature and the entry point. Twin: without grad it runs, as on a GPU."""
    from functorch.compile import aot_function, nop

    from simcuda import SimulationUnsupported

    with simulated_cuda(2):
        x = torch.rand(3, device=DEVICE, requires_grad=True)
        with pytest.raises(SimulationUnsupported, match=r"AOTAutograd on a simulated tensor that requires grad \(.+\)"):
            aot_function(lambda t: t.sin().sum(), fw_compiler=nop, dynamic=dynamic)(x)
        y = torch.rand(3, device=DEVICE)
        out = aot_function(lambda t: t.sin() * 2, fw_compiler=nop, dynamic=dynamic)(y)
        assert out.device == DEVICE and torch.equal(real_cpu(out), real_cpu(y).sin() * 2)


def test_opcheck_of_an_op_with_simulated_inputs_that_require_grad_is_a_refusal() -> None:
    """torchvision's test_ops.py runs `torch.library.opcheck` on its ops: its aot_dispatch test
    wraps the refusal in an OpCheckError, which stays a refusal (its cause)."""
    import torchvision  # noqa: F401 - registers torchvision's ops

    from simcuda.unsupported import is_refusal

    with simulated_cuda(2):
        x = torch.rand(1, 2, 8, 8, device=DEVICE, requires_grad=True)
        rois = torch.tensor([[0, 0.0, 0.0, 4.0, 4.0]], device=DEVICE)
        with pytest.raises(Exception) as raised:
            torch.library.opcheck(torch.ops.torchvision.roi_align.default, (x, rois, 1.0, 2, 2, 2, False), test_utils=("test_aot_dispatch_dynamic",))
        assert is_refusal(raised.value), raised.value


def test_device_properties_answer_as_the_runners_simulated_gpu() -> None:
    """torchvision's roi_align asks `is_compile_supported("cuda")` under deterministic algorithms,
    which reads the device's capability (`torch.cuda.get_device_properties`): a simcuda:N test
    refused there (40 of torchvision's test_ops.py cases). It answers the simulated runner's
    figures (an H100's capability, a name no one takes for a real GPU), and roi_align takes the
    path a GPU with Triton takes, equal to the CPU's. Twin: an index past the simulated devices
    fails as torch.cuda's own check does."""
    import torchvision

    x = torch.rand(1, 2, 8, 8, dtype=torch.float64)
    rois = torch.tensor([[0, 0.0, 0.0, 4.0, 4.0]], dtype=torch.float64)
    expected = torchvision.ops.roi_align(x, rois, output_size=2)
    with simulated_cuda(2):
        properties = torch.cuda.get_device_properties(1)
        assert (properties.name, torch.cuda.get_device_capability(1)) == ("simcuda simulated GPU (no real GPU)", (9, 0))
        assert torch.cuda.get_device_name() == properties.name
        torch.use_deterministic_algorithms(True)
        try:
            got = torchvision.ops.roi_align(x.to(DEVICE), rois.to(DEVICE), output_size=2)
        finally:
            torch.use_deterministic_algorithms(False)
        assert got.device == DEVICE and torch.allclose(real_cpu(got), expected)
        with pytest.raises(AssertionError, match="Invalid device id"):
            torch.cuda.get_device_properties(2)


def test_a_simulated_tvtensors_class_pickles_as_the_class_it_stands_for() -> None:
    """Issue 29, cause 6 in part: torchvision's tests key a transform's per-type table by
    `type(input)` and pickle the transform (72 cuda cases of test_transforms_v2.py); the simulated
    twin class did not pickle ("not the same object as ...Image"). It pickles as the TVTensor class
    it stands for, as `type()` is on a GPU. Twin: an unpicklable object next to it still fails."""
    from torchvision import tv_tensors

    with simulated_cuda(2):
        image = tv_tensors.Image(torch.rand(3, 4, 4)).to(DEVICE)
        table = {type(image): torch.float64, tv_tensors.Mask: torch.uint8}
        assert pickle.loads(pickle.dumps(table)) == {tv_tensors.Image: torch.float64, tv_tensors.Mask: torch.uint8}
        with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
            pickle.dumps({type(image): lambda: None})


class LegacySubclass(torch.Tensor):
    """A subclass made the legacy way, `LegacySubclass(tensor)` (torchvision's tests do)."""


def test_legacy_subclass_construction_aliases_its_tensor_as_on_cuda() -> None:
    """Outside any mode `Cls(x)` aliases x as a Cls, keeping its autograd; a Python mode's
    returned tensor already has a Python object, so inside the context it must alias as
    `as_subclass` does. On the simulated device the alias stays there, as a CUDA one would."""

    def body(device: torch.device) -> tuple:
        x = torch.arange(3.0, device=device).requires_grad_()
        made = LegacySubclass(x)
        # gpu_type: a simulated tensor's own type is a class made for it (issue 29 cause 6)
        assert gpu_type(made) is LegacySubclass and made.device == x.device
        (made * 2).sum().backward()  # the alias keeps x's autograd
        return made.as_subclass(torch.Tensor).detach(), x.grad

    expected, got = both(body)
    assert all(torch.equal(e, g) for e, g in zip(expected, got))
    with simulated_cuda(2):  # the other constructor forms still build new tensors
        assert LegacySubclass(2, 3).shape == (2, 3) and torch.equal(LegacySubclass([1.0, 2.0]).as_subclass(torch.Tensor), torch.tensor([1.0, 2.0]))


DYNAMO_IMPORTED_INSIDE = """
import torch
from simcuda import simulated_cuda

with simulated_cuda(2):
    import torch._dynamo.polyfills.tensor  # noqa: F401 - checks the functions it stands in for
print("imported")
"""


def test_dynamo_first_imported_inside_the_simulation_finds_torchs_own_functions() -> None:
    """Dynamo checks the signature of each torch function it replaces when first imported (timm's
    attention pools import it lazily, inside a test): a stand-in on such a function (torch.Tensor's
    __new__, for cause 9) must pass that check. A fresh process: this one has Dynamo already."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", DYNAMO_IMPORTED_INSIDE], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "imported", done.stderr[-2000:]


def test_an_optimizer_step_asks_the_accelerators_current_stream() -> None:
    """torch.optim's step asks `torch.accelerator.current_stream().is_capturing()` where the
    accelerator is CUDA (timm's optimizer tests): answered as an idle stream, the step runs as on
    the CPU."""

    def body(device: torch.device) -> torch.Tensor:
        weight = torch.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
        optimizer = torch.optim.Adam([weight], lr=0.1)
        for _ in range(3):
            optimizer.zero_grad()
            (weight**2).sum().backward()
            optimizer.step()
        return weight.detach()

    expected, got = both(body)
    assert torch.allclose(expected, got)


class SelfLoops(nn.Module):
    """PyTorch Geometric's `add_self_loops` as traced: a node count kept a tensor while tracing."""

    def forward(self, x: torch.Tensor, edge: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_tracing():
            count = torch.cat([edge.view(-1), edge.new_full((1,), fill_value=-1)]).max() + 1
        else:
            count = int(edge.max()) + 1
        loop = torch.arange(0, count, dtype=torch.long, device=edge.device)
        edge = torch.cat([edge, loop.unsqueeze(0).repeat(2, 1)], dim=1)
        return torch.zeros_like(x).index_add(0, edge[1], x.index_select(0, edge[0]))


def test_a_trace_of_cpu_tensors_made_inside_runs_as_made_without_the_simulation() -> None:
    """torch.jit.trace through the simulation's modes recorded constants where tensors were: its
    first run failed ("aten::view() Expected a value of type 'Tensor' ... found type 'int'"),
    though the test never touched CUDA (PyTorch Geometric's test_traceable_my_conv_with_self_loops)."""
    x, edge = torch.randn(4, 16), torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    bigger, chain = torch.randn(8, 16), torch.stack([torch.arange(0, 7), torch.arange(1, 8)])
    with simulated_cuda(2):
        traced = torch.jit.trace(SelfLoops(), (x, edge))
        assert torch.equal(traced(bigger, chain), SelfLoops()(bigger, chain))


def test_a_trace_of_a_simulated_tensor_is_refused() -> None:
    with simulated_cuda(2), pytest.raises(SimulationUnsupported, match="TorchScript tracing of a simulated tensor"):
        torch.jit.trace(SelfLoops(), (torch.randn(4, 16, device=DEVICE), torch.tensor([[0, 1], [1, 0]], device=DEVICE)))


# Each warns at the lambda's line without the simulation: `F.softmax` without `dim` from Python
# (stacklevel 3: the caller of softmax), `x.new_tensor(x)` from C++ (at the Python frame that called
# the binding).
TORCH_WARNINGS = {
    "python": (lambda x: torch.nn.functional.softmax(x), "Implicit dimension choice for softmax"),
    "c++": (lambda x: x.new_tensor(x), "To copy construct from a tensor"),
}


@pytest.mark.parametrize("nested", [False, True], ids=["one simulation", "one inside another"])
@pytest.mark.parametrize("raised_in", TORCH_WARNINGS)
def test_a_torch_warning_names_the_callers_line(raised_in: str, nested: bool) -> None:
    """Inside the simulation the call reaches the modes first: a Python warning's stacklevel
    counted their frames (it named torch's or simcuda's), and a C++ warning named the mode's frame
    that called the binding (simcuda/functions.py), so pytest's summary named simcuda. Either names
    the caller's line, as on a GPU, in a simulation inside another too (a simcuda:N test on the
    runner). A warning at stacklevel 1 stays where it was raised."""
    call, message = TORCH_WARNINGS[raised_in]
    outer = simulated_cuda() if nested else contextlib.nullcontext()
    with outer, simulated_cuda(), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call(torch.rand(2, 3, device="cuda:1"))
        warnings.warn("raised here", stacklevel=1)
        line = inspect.currentframe().f_lineno - 1
    (torchs, here) = seen
    assert (torchs.filename, torchs.lineno) == (__file__, call.__code__.co_firstlineno), (torchs.filename, torchs.lineno)
    assert message in str(torchs.message)
    assert (here.filename, here.lineno) == (__file__, line)


def test_a_filter_by_message_still_holds_a_renamed_cpp_warning() -> None:
    with simulated_cuda(), warnings.catch_warnings(record=True) as seen:
        warnings.filterwarnings("ignore", message="To copy construct")
        torch.rand(2, device="cuda:1").new_tensor(torch.ones(1))
    assert seen == []


def warns_when_big(x: torch.Tensor) -> torch.Tensor:
    if bool(x.sum() > 100):
        warnings.warn("big", stacklevel=2)
    return x * 2


def test_a_function_scripted_inside_the_simulation_may_call_warnings_warn() -> None:
    """TorchScript compiles `warnings.warn` to its builtin op, found by the function's identity:
    the simulation's stand-in must be that builtin too, or scripting compiles the stand-in and
    fails (kornia's `warp_affine` under `torch.jit.script`: "module, class, method, function,
    traceback, frame, or code object was expected, got builtin_function_or_method")."""
    with simulated_cuda(), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        scripted = torch.jit.script(warns_when_big)
        assert torch.equal(scripted(torch.ones(2, device="cuda:1")).cpu(), torch.full((2,), 2.0))
        scripted(torch.ones(200, device="cuda:1"))
    assert [str(warning.message) for warning in seen].count("big") == 1  # torch 2.14 deprecates torch.jit.script too


class AffineTensor(torch.Tensor):
    """MONAI's MetaTensor, in miniature: a constructor of its own whose second argument is the
    affine, and a `__torch_function__` that calls torch's own and carries the metadata along."""

    @staticmethod
    def __new__(cls, x, affine=None):
        return torch.as_tensor(x).as_subclass(cls)

    def __init__(self, x, affine=None) -> None:
        self.affine = torch.as_tensor(torch.eye(3) if affine is None else affine, dtype=torch.float64)

    def new_empty(self, size, **kwargs):  # torch's deepcopy of a subclass asks it (MONAI's too)
        return AffineTensor(self.as_subclass(torch.Tensor).new_empty(size, **kwargs))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        result = super().__torch_function__(func, types, args, kwargs or {})
        source = args[0][0] if args and isinstance(args[0], (list, tuple)) else args[0] if args else None
        if isinstance(result, AffineTensor) and isinstance(source, AffineTensor):
            result.__dict__.update(source.__dict__)  # as MONAI's copy_meta_from: the source's whole __dict__
        return result


@pytest.mark.parametrize(
    "rebuild",
    [
        pytest.param(copy.deepcopy, id="deepcopy"),
        pytest.param(lambda x: x + 1, id="op"),
        pytest.param(lambda x: torch.stack([x, x]), id="stack"),
        pytest.param(lambda x: x.clone(), id="clone"),
        pytest.param(lambda x: x.as_subclass(torch.Tensor).as_subclass(AffineTensor), id="as_subclass"),
    ],
)
def test_a_subclass_with_its_own_constructor_is_rebuilt_as_torch_rebuilds_it(rebuild) -> None:
    """MONAI 1.5.0's tests (213 cases): a deep copy or an `as_subclass` of a simulated MetaTensor
    called the class with simcuda's (data, device), so MetaTensor's `__init__` took the device for
    its affine ("must be real number, not torch.device"); and `super().__torch_function__` reached
    SimulatedTensor's disabled one, so `x + 1` lost the class and its metadata; and MetaTensor
    updates a result's `__dict__` from its input's, which took the input's data with it (`stack`
    of a batch of one: "too many indices"). torch builds a subclass's results without calling its
    `__init__` (`as_subclass` keeps no metadata anywhere)."""
    seen = []

    def body(device: torch.device) -> torch.Tensor:
        made = rebuild(AffineTensor(torch.arange(3.0), affine=2 * torch.eye(3)).to(device))
        seen.append((gpu_type(made), getattr(made, "affine", torch.zeros(0)).tolist()))
        return made.as_subclass(torch.Tensor)

    expected, got = both(body)
    assert torch.equal(expected, got)
    (on_cpu, simulated) = seen
    assert simulated == on_cpu and on_cpu[0] is AffineTensor


class SlottedTensor(torch.Tensor):
    __slots__ = ("label",)


def test_a_subclass_with_slots_of_its_own_moves_to_the_device() -> None:
    """The simulation's own fields are slots of a subclass's twin; a subclass with slots of its
    own cannot take them too ("multiple bases have instance lay-out conflict"): its twin keeps
    them in its __dict__, as a plain simulated tensor does."""

    def body(device: torch.device) -> torch.Tensor:
        made = torch.arange(3.0).as_subclass(SlottedTensor).to(device)
        assert gpu_type(made) is SlottedTensor
        return (made * 2).as_subclass(torch.Tensor)

    expected, got = both(body)
    assert torch.equal(expected, got)
