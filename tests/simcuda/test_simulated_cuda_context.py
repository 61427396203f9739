"""The simulated CUDA device's semantics inside its context, and torch exactly as found after it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from simcuda import SimulationUnsupported, is_simulated, real_cpu, simulated_cuda, stand_ins


def torch_state() -> dict[str, object]:
    """Everything the context touches, by identity where identity is the point."""
    return {
        "dispatch modes": torch._C._len_torch_dispatch_stack(),
        "function modes": torch._C._len_torch_function_stack(),
        "cudnn": torch.backends.cudnn.enabled,
        "only lift cpu tensors": torch._C._only_lift_cpu_tensors(),
        "torch.cuda": dict(vars(torch.cuda)),
        "torch.compile": torch.compile,
        "torch.Generator": torch.Generator,
        "DataLoader.__iter__": torch.utils.data.DataLoader.__iter__,
        "cuda available": torch.cuda.is_available(),
    }


def assert_same(before: dict[str, object], after: dict[str, object]) -> None:
    changed = [
        f"torch.cuda.{name}" for name, value in before["torch.cuda"].items() if after["torch.cuda"].get(name) is not value
    ] + [key for key in before if key != "torch.cuda" and after[key] != before[key]]
    assert not changed, f"left changed: {changed}"


def test_tensors_report_cuda_and_hold_real_data() -> None:
    with simulated_cuda():
        x = torch.arange(6.0, device="cuda:1").reshape(2, 3)
        assert x.device == torch.device("cuda:1") and x.is_cuda and is_simulated(x)
        assert x.sum().item() == 15.0
        assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert "device='cuda:1'" in repr(x + 1)
        assert f"{x.max():.1f}" == "5.0"
        assert torch.equal(x.cpu(), torch.arange(6.0).reshape(2, 3))
        with pytest.raises(TypeError, match="can't convert cuda:1 device type tensor to numpy"):
            x.numpy()
    assert torch.equal(real_cpu(x), torch.arange(6.0).reshape(2, 3))
    plain = torch.ones(2)
    assert real_cpu(plain) is plain and not is_simulated(plain)


def test_transfers_follow_cuda() -> None:
    with simulated_cuda():
        x = torch.ones(3)
        assert x.to("cuda:1").device == torch.device("cuda:1")
        assert x.cuda().device == torch.device("cuda:0")
        torch.cuda.set_device(1)
        assert torch.cuda.current_device() == 1
        assert x.cuda().device == torch.device("cuda:1"), "cuda() honours the current device"
        assert torch.zeros(1, device="cuda").device == torch.device("cuda:1")
        with torch.cuda.device(0):
            assert torch.empty(1, device="cuda").device == torch.device("cuda:0")
        y = x.to("cuda:1")
        assert y.to("cuda:1") is y, "a no-op .to returns the tensor itself, as on CUDA"
        copied = y.to("cuda:1", copy=True)
        assert copied is not y and copied.device == y.device and torch.equal(real_cpu(copied), real_cpu(y))
        assert y.to(torch.float64).device == torch.device("cuda:1")
        assert not is_simulated(y.cpu()) and y.cpu().device == torch.device("cpu")
        assert y.new_zeros(2).device == torch.device("cuda:1")
        assert torch.cuda.is_available() and torch.cuda.device_count() == 2


def test_transfers_follow_cuda_under_inference_mode() -> None:
    """Under `torch.inference_mode()` (sam2's predictors run in it) autograd's keys are off, so
    composite ops such as `aten::to` reach the simulation whole: `.cpu()` / `.to("cpu")` handed
    back the simulated tensor itself, on cuda:0, where a GPU gives a CPU copy (and a non-blocking
    one, pinned, starts stream tracking). They run as their decomposition does. Twin: a no-op
    `.to` still returns the tensor itself, and an op mixing devices still fails as on CUDA."""
    with simulated_cuda() as sim, torch.inference_mode():
        x = torch.rand(3, device="cuda:1")
        for moved in (x.cpu(), x.to("cpu"), x.to(torch.device("cpu"), torch.bfloat16)):
            assert not is_simulated(moved) and moved.device == torch.device("cpu")
            assert torch.equal(moved.float(), real_cpu(x).to(moved.dtype).float())
        assert x.to("cuda:0").device == torch.device("cuda:0") and x.to("cuda:1") is x
        assert x.to(torch.float64).device == torch.device("cuda:1")
        copied = x.to("cpu", non_blocking=True)
        assert copied.is_pinned() and sim.streams.armed
        torch.cuda.synchronize()
        assert torch.equal(copied, real_cpu(x))
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            x + torch.ones(3, device="cuda:0")


def test_indexing_and_identity_follow_cuda() -> None:
    with simulated_cuda():
        x = torch.arange(4.0, device="cuda:1")
        assert x[[0, 2]].tolist() == [0.0, 2.0] and x[[0, 2]].device == torch.device("cuda:1")
        x[[1, 3]] = 0.0
        assert x.tolist() == [0.0, 0.0, 2.0, 0.0]
        assert torch.as_tensor(x, device="cuda:1") is x
        assert x.data_ptr() == real_cpu(x).data_ptr() != 0


@pytest.mark.parametrize("key", [1, (slice(None), 0), (Ellipsis, slice(1, None, 2)), (None, 0, slice(-2, None)), Ellipsis, ()])
def test_basic_indexing_is_a_simulated_view_with_autograd(key: object) -> None:
    """Ints, slices, None and `...` index the CPU data directly (indexing.py): the result is a
    view on the same simulated device, writes through it reach the base, gradients flow back."""
    base = torch.arange(12.0).reshape(3, 4)
    with simulated_cuda():
        x = base.to("cuda:1").requires_grad_()
        view = x[key]
        assert is_simulated(view) and view.device == torch.device("cuda:1") and view is not x
        assert torch.equal(real_cpu(view), base[key])
        view.sum().backward()
        expected = torch.zeros_like(base)
        expected[key] = 1.0
        assert torch.equal(real_cpu(x.grad), expected)
        plain = base.to("cuda:1")
        plain[key].fill_(-1.0)
        assert (real_cpu(plain)[key] == -1.0).all(), "a view, not a copy"
        with pytest.raises(IndexError, match="out of bounds"):
            plain[3]


@pytest.mark.parametrize(
    ("make_value", "transfer"),
    [
        (lambda: 1.5, None),
        (lambda: torch.full((3,), 1.5, device="cuda:1", requires_grad=True), None),
        (lambda: torch.tensor(1.5), None),
        (lambda: torch.full((3,), 1.5), "cpu"),
        (lambda: torch.full((3,), 1.5, device="cuda:0"), "cuda:0"),
    ],
    ids=["number", "same-device", "cpu-0-dim", "cpu", "other-device"],
)
def test_assigning_through_a_basic_key_writes_the_data_and_logs_only_copies(make_value: Callable[[], object], transfer: str | None) -> None:
    """`x[..., 0] = v` (indexing.py): the value lands as torch lands it, a gradient flows to a value
    that requires one, and the log holds a copy exactly when the value came from another device."""
    with simulated_cuda() as sim:
        x = torch.zeros(3, 2, device="cuda:1")
        value = make_value()
        before = len(sim.allocations)
        x[..., 0] = value
        copies = [entry.source for entry in sim.allocations[before:] if entry.is_transfer]
        assert x.device == torch.device("cuda:1") and real_cpu(x).tolist() == [[1.5, 0.0]] * 3
        assert copies == ([] if transfer is None else [transfer])
        if isinstance(value, torch.Tensor) and value.requires_grad:
            x.sum().backward()
            assert real_cpu(value.grad).tolist() == [1.0] * 3


def test_a_cpu_tensor_sliced_by_a_simulated_bound_reads_it_through_the_dispatcher() -> None:
    """`x[t:]` of a CPU `x` with `t` a 0-dim tensor on the simulated device: torch's binding reads
    the bound with its own `__index__`, which reached the real CUDA (a driver error here, the real
    GPU on a GPU machine); on CUDA it reads the value."""
    x = torch.arange(12.0).reshape(3, 4)
    with simulated_cuda():
        bound = torch.tensor(1, device="cuda:1")
        assert torch.equal(x[bound:], x[1:]) and torch.equal(x[:, 1 : bound + 2], x[:, 1:3])
        x[bound:, 0] = -1.0
    assert x[:, 0].tolist() == [0.0, -1.0, -1.0]


def test_plain_cpu_ops_inside_the_context_run_as_torch_runs_them_and_are_logged() -> None:
    """An op of CPU tensors only is torch's own op; each new tensor is logged on the CPU with its
    caller, a view or an in-place result is not."""
    with simulated_cuda() as sim:
        x = torch.ones(2, 3, requires_grad=True)
        before = len(sim.allocations)
        y = (x * 2).sum(dim=0)
        view = y.view(3)
        assert y.add_(1) is y and not is_simulated(y)
        made = sim.allocations[before:]
        y.sum().backward()
    assert [(entry.op, entry.device, entry.shape) for entry in made] == [("aten::mul", "cpu", (2, 3)), ("aten::sum", "cpu", (3,))]
    assert all(entry.caller.startswith(__file__) for entry in made)
    assert view.tolist() == [5.0] * 3 and x.grad.tolist() == [[2.0] * 3] * 2


def test_tensors_from_data_follow_cuda() -> None:
    """torch.tensor/as_tensor on CUDA tensors or lists of them: PyTorch's bindings read those
    through real CUDA; the simulation answers as CUDA does."""
    with simulated_cuda():
        x = torch.rand(3, device="cuda:1")
        assert torch.as_tensor(x) is x and torch.as_tensor(x, device="cuda:1") is x
        assert torch.as_tensor(x, dtype=torch.float64).device == x.device
        copied = torch.tensor(x)
        assert copied is not x and copied.device == x.device and torch.equal(real_cpu(copied), real_cpu(x))
        from_values = torch.tensor([x[0], x[1]])
        assert from_values.device == torch.device("cpu"), "a list of CUDA scalars is read by value"
        assert torch.tensor([x[0], x[1]], device="cuda:0").device == torch.device("cuda:0")
        assert torch.tensor([1.0, 2.0], device="cuda:1", requires_grad=True).requires_grad


def test_a_cuda_draw_leaves_the_cpu_generator_as_it_was() -> None:
    """A real GPU draws from a generator of its own: a CUDA draw in a test does not shift the CPU
    draws after it (a CPU test's seeded numbers stay the same, simulated or not)."""
    with simulated_cuda():
        torch.manual_seed(3)
        torch.rand(5, device="cuda:1")
        torch.randn(2, 2, device="cuda:0")
        after = torch.rand(3)
    torch.manual_seed(3)
    assert torch.equal(after, torch.rand(3))


def test_each_device_draws_from_its_own_generator_seeded_as_the_cpu() -> None:
    """cuda:0's draws do not shift cuda:1's; torch.manual_seed seeds every device, and a device
    seeded alike gives the CPU's numbers (a simulated run compares with its CPU run under one
    seed); fork_rng puts a device's state back; torch.cuda.manual_seed seeds the current device."""
    torch.manual_seed(3)
    cpu = torch.rand(3)
    with simulated_cuda():
        torch.manual_seed(3)
        torch.rand(5, device="cuda:0")
        first = torch.rand(3, device="cuda:1")
        assert torch.equal(real_cpu(first), cpu)
        with torch.random.fork_rng(devices=[1]):
            torch.rand(5, device="cuda:1")
        assert not torch.equal(real_cpu(torch.rand(3, device="cuda:1")), cpu)  # past `first`'s numbers
        torch.cuda.set_device(1)
        torch.cuda.manual_seed(3)
        assert torch.equal(real_cpu(torch.rand(3, device="cuda:1")), cpu)
        assert torch.cuda.initial_seed() == 3


def test_a_shared_generator_is_one_stream_for_the_cpu_and_every_device() -> None:
    """`shared_generator=True` (the harness's simulated oracles): the devices draw from the CPU's
    generator, so a run gives the CPU's numbers under one seed whichever device each draw is on."""
    torch.manual_seed(3)
    cpu = torch.rand(6)
    with simulated_cuda(shared_generator=True):
        torch.manual_seed(3)
        parts = (torch.rand(2), torch.rand(2, device="cuda:1"), torch.rand(2, device="cuda:0"))
    assert torch.equal(torch.cat([real_cpu(part) for part in parts]), cpu)


def test_module_to_moves_parameters_and_buffers_not_plain_attributes() -> None:
    with simulated_cuda():
        module = nn.Linear(3, 2)
        module.register_buffer("kept", torch.ones(2))
        module.register_buffer("scratch", torch.ones(2), persistent=False)
        module.plain = torch.ones(2)
        module.to("cuda:1")
        moved = {name: str(t.device) for name, t in [*module.named_parameters(), *module.named_buffers()]}
        assert moved == {"weight": "cuda:1", "bias": "cuda:1", "kept": "cuda:1", "scratch": "cuda:1"}
        assert isinstance(module.weight, nn.Parameter)
        assert module.plain.device == torch.device("cpu"), "a plain attribute stays, as on CUDA"
        out = module(torch.rand(4, 3, device="cuda:1"))
        assert out.device == torch.device("cuda:1")


def test_allocations_are_logged_per_device_with_their_caller() -> None:
    with simulated_cuda() as sim:
        x = torch.zeros(2, 3, device="cuda:1")
        x.to("cuda:0")
        (x + 1).cpu()
    made = sim.allocations[0]
    assert (made.op, made.device, made.shape, made.dtype) == ("torch.zeros", "cuda:1", (2, 3), "float32")
    assert made.caller.startswith(__file__) and "test_allocations_are_logged" in made.caller
    transfers = [(a.source, a.device) for a in sim.allocations if a.is_transfer]
    assert transfers == [("cuda:1", "cuda:0"), ("cuda:1", "cpu")]
    assert sim.devices_touched() == {"cuda:0", "cuda:1", "cpu"}
    assert [a.device for a in sim.foreign_allocations(allowed={"cuda:1", "cpu"})] == ["cuda:0"]


def test_a_log_kept_only_outside_the_allowed_devices_answers_for_those_alone() -> None:
    with simulated_cuda() as sim:
        sim.log_only_outside({"cuda:1", "cpu"})
        x = torch.zeros(2, 3, device="cuda:1")
        x.to("cuda:0")
        (x + 1).cpu()
        torch.ones(2) + 1
    assert [(a.op, a.device, a.source) for a in sim.allocations] == [("aten::_to_copy", "cuda:0", "cuda:1")]
    assert [a.device for a in sim.foreign_allocations(allowed={"cuda:1", "cpu"})] == ["cuda:0"]
    with pytest.raises(ValueError, match="does not log allocations on cpu"):
        sim.foreign_allocations(allowed={"cuda:1"})


class CountingMode(TorchDispatchMode):
    """A test's own dispatch mode: it must see every op, plain ones included."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func._schema.name)
        return func(*args, **(kwargs or {}))


def test_plain_cpu_calls_nothing_watches_skip_the_dispatch_mode_and_nothing_else(monkeypatch) -> None:
    """Where the log leaves the CPU out (the plugin's runs), a call of plain CPU tensors runs past
    the dispatch mode (several microseconds per op saved), indexing included; a call that names a
    CUDA device, even by an int, still lands on the simulated one; a mode of the test's own still
    sees its ops; a compiled run leaves the thread's dispatch keys as found; where the log keeps
    the CPU each op is logged."""
    from simcuda.dispatch import SimulatedDispatch

    reached: list[str] = []
    run_plain = SimulatedDispatch._run_plain
    monkeypatch.setattr(SimulatedDispatch, "_run_plain", lambda self, func, *rest: reached.append(str(func)) or run_plain(self, func, *rest))
    keys = torch._C._dispatch_tls_local_exclude_set()
    x = torch.rand(3, 4)
    with simulated_cuda() as sim:
        (x + x).exp()
        assert reached == ["aten.add.Tensor", "aten.exp.default"]  # the CPU is logged: each op seen
        sim.log_only_outside({"cpu", "cuda:1"})
        reached.clear()
        torch.add(x, x).exp()
        x[0, 1:3] = x[1, torch.tensor([0, 1])]
        float(x[..., 2].sum())
        assert reached == []
        assert all(is_simulated(moved) for moved in (x.cuda(1), x.to(1), torch.zeros(3, device=1), x.new_zeros(2, device=1)))
        assert torch.equal(x[torch.tensor(1, device="cuda:1") :], x[1:])  # a bound read from the device
        with CountingMode() as mode:
            x + x
        assert mode.ops == ["aten::add"]
        compiled = torch.compile(lambda a, b: (a * 2 + b).sum(), backend="eager")
        assert torch.equal(compiled(x, x), (x * 2 + x).sum())
        assert torch._C._dispatch_tls_local_exclude_set() == keys and is_simulated(x.to("cuda:1"))
    assert torch._C._dispatch_tls_local_exclude_set() == keys


def test_torch_is_left_as_found() -> None:
    before = torch_state()
    with simulated_cuda():
        torch.cuda.set_device(1)
        assert torch_state()["torch.cuda"] != before["torch.cuda"]
        # cuDNN off underneath (composite ops would pick its kernels), its flag as the code set it
        assert torch.backends.cudnn.enabled and not stand_ins._REAL_CUDNN_ENABLED[0]()
    assert_same(before, torch_state())


def test_torch_is_left_as_found_when_the_body_raises() -> None:
    before = torch_state()
    with pytest.raises(RuntimeError, match="same device"), simulated_cuda():
        torch.ones(2, device="cuda:1") + torch.ones(2)
    assert_same(before, torch_state())
    with pytest.raises(SimulationUnsupported), simulated_cuda():
        torch.cuda.CUDAGraph()
    assert_same(before, torch_state())


def test_a_leaked_tensor_refuses_ops_outside_the_context() -> None:
    with simulated_cuda():
        x = torch.ones(2, device="cuda:1")
    with pytest.raises(RuntimeError, match="outside simulated_cuda"):
        x + 1


def test_a_tensor_a_closed_simulation_left_is_the_same_devices_in_the_next_and_an_open_ones_is_refused() -> None:
    """A library's per-device cache filled in one simcuda:N test meets the next test's tensors, as
    a GPU's memory outlives a test; a tensor of a simulation still open around this one (the
    runner's, a real device beside the simulated one) is refused."""
    with simulated_cuda():
        left_behind = torch.ones(2, device="cuda:1")
    with simulated_cuda():
        assert torch.equal((torch.ones(2, device="cuda:1") + left_behind).cpu(), torch.full((2,), 2.0))
    with simulated_cuda():
        around = torch.ones(2, device="cuda:1")
        with simulated_cuda(), pytest.raises(SimulationUnsupported, match="a real CUDA tensor meeting simulated ones"):
            torch.ones(2, device="cuda:1") + around


def test_meta_stays_meta_inside_the_context() -> None:
    """`device="meta"` is kept as asked (only a CUDA device is stood in for by the CPU data): a
    module moved to meta inside the simulation (kornia-2791's state oracle on the runner) is on
    meta, as on a GPU machine."""
    with simulated_cuda():
        moved = torch.nn.Linear(2, 2).to("meta")
        assert {parameter.device.type for parameter in moved.parameters()} == {"meta"}
        assert torch.ones(2, device="cuda").to("meta").device.type == "meta"
        assert torch.empty(3, device="meta").device.type == "meta"


LEGACY_TYPES = {
    "a CPU tensor, by name": (lambda x, y: x.type("torch.cuda.DoubleTensor"), "cuda:1", torch.float64),
    "a CPU tensor, by class": (lambda x, y: x.type(torch.cuda.HalfTensor), "cuda:1", torch.float16),
    "a cuda:0 tensor keeps its device": (lambda x, y: y.type("torch.cuda.DoubleTensor"), "cuda:0", torch.float64),
    "non_blocking by keyword": (lambda x, y: x.type("torch.cuda.IntTensor", non_blocking=True), "cuda:1", torch.int32),
    "a CPU type back to the CPU": (lambda x, y: y.type("torch.FloatTensor"), "cpu", torch.float32),
}


@pytest.mark.parametrize(("convert", "where", "dtype"), LEGACY_TYPES.values(), ids=LEGACY_TYPES.keys())
def test_a_legacy_cuda_type_moves_as_on_a_gpu(convert, where: str, dtype: torch.dtype) -> None:
    """`x.type("torch.cuda.DoubleTensor")` starts CUDA in its binding and moves the tensor to the
    current device (its own, when already on CUDA): simulated, never the real CUDA's driver error."""
    with simulated_cuda() as sim:
        sim.set_device(1)
        x, y = torch.arange(3.0), torch.arange(3.0, device="cuda:0")
        out = convert(x, y)
        assert (out.device, out.dtype) == (torch.device(where), dtype)
        assert real_cpu(out).tolist() == [0, 1, 2]


def test_an_unknown_legacy_cuda_type_is_torchs_error_and_a_sparse_one_refused() -> None:
    """A name no CUDA type has gets the error a GPU's torch raises; a sparse CUDA type is refused
    (sparse tensors are not simulated), never the real CUDA's driver error."""
    with simulated_cuda():
        with pytest.raises(ValueError, match="invalid type: 'torch.cuda.FooTensor'"):
            torch.arange(3.0).type("torch.cuda.FooTensor")
        with pytest.raises(SimulationUnsupported, match="legacy sparse CUDA type"):
            torch.arange(3.0).type("torch.cuda.sparse.FloatTensor")


def test_a_legacy_cuda_type_meeting_another_device_still_raises() -> None:
    """The twin a GPU fails too: the moved tensor is on cuda:1, and cuda:0's tensor meets it."""
    with simulated_cuda() as sim:
        sim.set_device(1)
        moved = torch.ones(2).type("torch.cuda.FloatTensor")
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            moved + torch.ones(2, device="cuda:0")


def test_a_cuda_default_device_makes_factories_on_the_simulated_device() -> None:
    """`torch.set_default_device("cuda")` puts a mode below the simulation's that would name the
    real CUDA: the simulation's factories take it (the current device), an explicit CPU device
    stays, and the default put back leaves the CPU as it was."""
    with simulated_cuda() as sim:
        sim.set_device(1)
        torch.set_default_device("cuda")
        try:
            made = (torch.zeros(2), torch.tensor([1.0]), torch.arange(3), torch.rand(2))
            assert {tensor.device for tensor in made} == {torch.device("cuda:1")}
            assert torch.zeros(2, device="cpu").device == torch.device("cpu")
        finally:
            torch.set_default_device(None)
        assert torch.zeros(1).device == torch.device("cpu")
