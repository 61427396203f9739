"""PyTorch's device rules, one row per case, checked against the simulated device and, where it can
speak, against FakeTensorMode (PyTorch's own device propagation, torch/_subclasses/fake_tensor.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from packaging.version import Version
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from simcuda import rules, simulated_cuda
from simcuda.state import Devices

MISMATCH = rules.MISMATCH_PREFIX
LONG = torch.long


@dataclass(frozen=True)
class Row:
    """`op` applied to tensors made on `inputs` ((device, shape, dtype)); `expected` is the output's
    device or the start of the error text. `fake=False`: FakeTensor cannot run the row."""

    op: Callable[..., object]
    inputs: tuple[tuple[str, tuple[int, ...], torch.dtype], ...]
    expected: str
    fake: bool = True


def f32(device: str, *shape: int) -> tuple[str, tuple[int, ...], torch.dtype]:
    return device, shape, torch.float32


def i64(device: str, *shape: int) -> tuple[str, tuple[int, ...], torch.dtype]:
    return device, shape, LONG


ROWS = {
    "add same device": Row(torch.add, (f32("cuda:1", 2, 3), f32("cuda:1", 2, 3)), "cuda:1"),
    "add cuda:0 cuda:1": Row(torch.add, (f32("cuda:0", 2, 3), f32("cuda:1", 2, 3)), f"{MISMATCH}, cuda:0 and cuda:1!"),
    "add cuda:1 cpu": Row(torch.add, (f32("cuda:1", 2, 3), f32("cpu", 2, 3)), f"{MISMATCH}, cuda:1 and cpu!"),
    "add cpu cuda:1 (CUDA named first)": Row(torch.add, (f32("cpu", 2, 3), f32("cuda:1", 2, 3)), f"{MISMATCH}, cuda:1 and cpu!"),
    "mul cuda:1 with 0-dim cpu": Row(torch.mul, (f32("cuda:1", 2, 3), f32("cpu")), "cuda:1"),
    "mul 0-dim cpu with cuda:1": Row(torch.mul, (f32("cpu"), f32("cuda:1", 2, 3)), "cuda:1"),
    "0-dim cuda:1 with cpu": Row(torch.add, (f32("cuda:1"), f32("cpu", 3)), f"{MISMATCH}, cuda:1 and cpu!"),
    "0-dim cuda:1 with 0-dim cuda:0": Row(torch.add, (f32("cuda:1"), f32("cuda:0")), f"{MISMATCH}, cuda:1 and cuda:0!"),
    "cpu only": Row(torch.sub, (f32("cpu", 2), f32("cpu", 2)), "cpu"),
    "where with a 0-dim cpu branch": Row(
        lambda c, a, b: torch.where(c > 0.5, a, b), (f32("cuda:1", 4), f32("cuda:1", 4), f32("cpu")), "cuda:1"
    ),
    "cat cuda:1 cpu": Row(lambda a, b: torch.cat([a, b]), (f32("cuda:1", 2), f32("cpu", 2)), MISMATCH),
    "matmul cuda:1 cpu": Row(torch.matmul, (f32("cuda:1", 2, 2), f32("cpu", 2, 2)), "Expected all tensors to be on the same device"),
    "conv2d weight on cpu": Row(F.conv2d, (f32("cuda:1", 1, 1, 4, 4), f32("cpu", 1, 1, 3, 3)), "Expected all tensors to be on the same device"),
    "index with cpu indices": Row(lambda x, i: x[i], (f32("cuda:1", 4, 2), i64("cpu", 3)), "cuda:1"),
    "index_put with cpu indices": Row(lambda x, i, v: x.index_put_((i,), v), (f32("cuda:1", 4), i64("cpu", 2), f32("cuda:1", 2)), "cuda:1"),
    # Writing moves the indices to `self`'s device (AdvancedIndex); only reading checks where they are.
    "index_put with cuda:0 indices": Row(lambda x, i, v: x.index_put_((i,), v), (f32("cuda:1", 4), i64("cuda:0", 2), f32("cuda:1", 2)), "cuda:1"),
    "cpu tensor indexed on cuda:1": Row(
        lambda x, i: x[i], (f32("cpu", 4), i64("cuda:1", 2)),
        "indices should be either on cpu or on the same device as the indexed tensor (cpu)", fake=False
    ),
    "cuda:0 tensor indexed on cuda:1": Row(
        lambda x, i: x[i], (f32("cuda:0", 4), i64("cuda:1", 2)),
        "indices should be either on cpu or on the same device as the indexed tensor (cuda:0)", fake=False
    ),
    "index_select with a cpu index": Row(lambda x, i: torch.index_select(x, 0, i), (f32("cuda:1", 4), i64("cpu", 2)), MISMATCH),
    "copy_ cpu into cuda:1": Row(lambda d, s: d.copy_(s), (f32("cuda:1", 3), f32("cpu", 3)), "cuda:1"),
    "copy_ cuda:1 into cpu": Row(lambda d, s: d.copy_(s), (f32("cpu", 3), f32("cuda:1", 3)), "cpu"),
    ".cpu()": Row(lambda x: x.cpu(), (f32("cuda:1", 3),), "cpu"),
    ".to(other tensor)": Row(lambda x, y: x.to(y), (f32("cpu", 3), f32("cuda:1", 1)), "cuda:1", fake=False),
    ".to('cuda:0') from cuda:1": Row(lambda x: x.to("cuda:0"), (f32("cuda:1", 3),), "cuda:0", fake=False),
    "zeros_like": Row(torch.zeros_like, (f32("cuda:1", 3),), "cuda:1"),
    "zeros_like device=cpu": Row(lambda x: torch.zeros_like(x, device="cpu"), (f32("cuda:1", 3),), "cpu"),
    "new_zeros": Row(lambda x: x.new_zeros(2), (f32("cuda:1", 3),), "cuda:1", fake=False),
    "factory without device=": Row(lambda x: x + torch.ones(3), (f32("cuda:1", 3),), f"{MISMATCH}, cuda:1 and cpu!"),
    "factory with device=x.device": Row(lambda x: x + torch.ones(3, device=x.device), (f32("cuda:1", 3),), "cuda:1", fake=False),
    "normal_ with a cpu generator": Row(
        lambda x: x.normal_(generator=torch.Generator()), (f32("cuda:1", 3),),
        "Expected a 'cuda' device type for generator but found 'cpu'", fake=False
    ),
    "randn with a cpu generator": Row(
        lambda x: torch.randn(3, device=x.device, generator=torch.Generator()),
        (f32("cuda:1", 3),),
        "Expected a 'cuda' device type for generator but found 'cpu'",
        fake=False,
    ),
    "device past the count": Row(lambda x: torch.zeros(1, device="cuda:2"), (f32("cpu", 1),), "CUDA error: invalid device ordinal", fake=False),
}


def outcome(row: Row, make: Callable[[str, tuple[int, ...], torch.dtype], torch.Tensor]) -> str:
    tensors = [make(*spec) for spec in row.inputs]
    try:
        result = row.op(*tensors)
    except (RuntimeError, IndexError) as error:
        return str(error)
    return str(result.device)


def simulated(device: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype, device=device) if dtype == LONG else torch.rand(shape, device=device)


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_simulation_follows_the_rule(row: Row) -> None:
    with simulated_cuda():
        assert outcome(row, simulated).startswith(row.expected)


# FakeTensor rules that changed between the releases in range, each with the first that agrees.
FAKE_AGREES_FROM = {"conv2d weight on cpu": "2.14"}  # torch 2.11's FakeTensor lets the CPU weight through (real CUDA refuses it)


def fake_rows() -> list:
    torch_release = Version(torch.__version__.split("+")[0])
    return [
        pytest.param(
            row, id=name,
            marks=[pytest.mark.skip(reason=f"torch {torch_release}'s FakeTensor reads this row otherwise; it agrees from {FAKE_AGREES_FROM[name]}")]
            if name in FAKE_AGREES_FROM and torch_release < Version(FAKE_AGREES_FROM[name]) else [],
        )
        for name, row in ROWS.items() if row.fake
    ]


@pytest.mark.parametrize("row", fake_rows())
def test_fake_tensor_agrees(row: Row, monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is PyTorch's rule, not the simulation's echo: FakeTensor reads it the same way."""
    # Where CUDA is available FakeTensor first makes a real tensor on each fake device (for
    # backward): cuda:1 on a one-GPU machine is CUDA's invalid ordinal (seen on an H200). The rules
    # need no real device.
    monkeypatch.setattr(fake_tensor, "init_gpu_context", lambda device: None)
    mode = FakeTensorMode()

    def fake(device: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return FakeTensor(mode, torch.empty(shape, dtype=dtype, device="meta"), torch.device(device))

    with mode:
        seen = outcome(row, fake)
    needed = 1 + max((torch.device(device).index or 0 for device, _, _ in row.inputs if device.startswith("cuda")), default=-1)
    if seen.startswith("CUDA error: invalid device ordinal") and 0 < (count := torch.cuda.device_count()) < needed:
        # Two rows on an H200 alone: FakeTensor ran a kernel of the row for real on each device.
        pytest.skip(f"FakeTensor's reference of this row runs on a real cuda:{needed - 1}: needs {needed} CUDA devices, {count} visible")
    assert seen.startswith(row.expected) or (row.expected.startswith(MISMATCH[:20]) and "device" in seen), seen


def test_unindexed_cuda_is_the_current_device() -> None:
    devices = Devices(2)
    devices.current = 1
    assert rules.normalize("cuda", devices) == torch.device("cuda:1")
    assert rules.normalize(0, devices) == torch.device("cuda:0")
    assert rules.normalize("cpu", devices) == torch.device("cpu")
    assert rules.index_of(None, devices) == rules.index_of(-1, devices) == 1
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        rules.normalize("cuda:2", devices)


def test_the_device_count_a_runner_answers_is_read_at_each_question() -> None:
    """A runner's count changes until CUDA starts (CUDA_VISIBLE_DEVICES is read at each question)."""
    visible = [0, 1]
    devices = Devices(lambda: len(visible))
    assert devices.index(1) == 1
    visible.pop()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        devices.index(1)


def test_set_device_takes_cuda_devices_on_the_simulation_only() -> None:
    with simulated_cuda(device_count=2) as sim:
        sim.set_device("cuda:1")
        assert sim.devices.current == 1
        with pytest.raises(ValueError, match="Expected a cuda device"):
            sim.set_device("cpu")
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            sim.devices.set_current(2)
        assert sim.current == 1
