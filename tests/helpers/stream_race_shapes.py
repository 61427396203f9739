"""The race shapes, each a body run as its racy twin (`ordered=False`) or its ordered twin, and
what catches each: the simulated device (tests/simcuda/test_simcuda_streams.py) and, on a real GPU, torch's
own CUDA sanitizer (tests/simcuda/test_stream_shapes_on_a_real_gpu.py). Plain torch.cuda code: the same
body runs inside `simulated_cuda()` and on a real GPU."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch


class RaceShape(NamedTuple):
    body: Callable[[bool], None]
    racing_op: str  # the racing access, as the simulation names it
    earlier_op: str  # the access it is not ordered after
    racer: str  # the racing participant
    # torch.cuda._sanitizer sees it: it tracks CUDA tensors' kernels only, so it has no host
    # participant, and it forgets a block when it is freed (a reuse starts a fresh record).
    sanitizer_sees: bool


def side_stream_reads_default_write(ordered: bool) -> None:
    x = torch.ones(4, device="cuda")
    side = torch.cuda.Stream()
    if ordered:
        side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x * 2


def default_stream_reads_side_result(ordered: bool) -> None:
    x = torch.ones(4, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = x * 2
    if ordered:
        torch.cuda.current_stream().wait_stream(side)
    y + 1


def event_recorded_before_the_work(ordered: bool) -> None:
    """torchvision-8587's shape: the event that should mark the work done is recorded before it."""
    x = torch.ones(4, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    done = torch.cuda.Event()
    if not ordered:
        done.record(side)
    with torch.cuda.stream(side):
        y = x * 2
    if ordered:
        done.record(side)
    torch.cuda.current_stream().wait_event(done)
    y + 1


def copy_to_pinned_read_before_synchronize(ordered: bool) -> None:
    x = torch.ones(4, device="cuda")
    host = torch.empty(4).pin_memory()
    host.copy_(x, non_blocking=True)
    if ordered:
        torch.cuda.current_stream().synchronize()
    host.sum()


def non_blocking_to_cpu_read_before_synchronize(ordered: bool) -> None:
    """PyTorch issue 127612: ATen pins the destination of a non_blocking copy to the host."""
    y = torch.ones(4, device="cuda").to("cpu", non_blocking=True)
    if ordered:
        torch.cuda.synchronize()
    y.sum()


def pinned_source_overwritten_before_the_copy_ran(ordered: bool) -> None:
    source = torch.ones(4).pin_memory()
    source.to("cuda", non_blocking=True)
    if ordered:
        event = torch.cuda.Event()
        event.record()
        event.synchronize()
    source.fill_(3)


def two_streams_write_one_tensor(ordered: bool) -> None:
    x = torch.zeros(4, device="cuda")
    first, second = torch.cuda.Stream(), torch.cuda.Stream()
    first.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(first):
        x.add_(1)
    if ordered:
        second.wait_stream(first)
    with torch.cuda.stream(second):
        x.mul_(2)


def value_read_on_the_default_stream(ordered: bool) -> None:
    """`.item()` runs on the current stream: a side stream's result needs waiting for first."""
    x = torch.ones(4, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        total = x.sum()
    if ordered:
        torch.cuda.current_stream().wait_stream(side)
    total.item()


def freed_while_another_stream_reads_it(ordered: bool) -> None:
    """The caching allocator hands a freed block to its stream's next allocation (9606's sibling)."""
    x = torch.ones(1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x * 2
    if ordered:
        x.record_stream(side)
    del x
    torch.zeros(1024, device="cuda")


SHAPES: dict[str, RaceShape] = {
    "side stream reads a default-stream write": RaceShape(
        side_stream_reads_default_write, "aten::mul", "work queued before", "side stream", sanitizer_sees=True
    ),
    "default stream reads a side-stream result": RaceShape(
        default_stream_reads_side_result, "aten::add", "aten::mul", "default stream", sanitizer_sees=True
    ),
    "event recorded before the work (8587)": RaceShape(
        event_recorded_before_the_work, "aten::add", "aten::mul", "default stream", sanitizer_sees=True
    ),
    "pinned copy to the host read before synchronize": RaceShape(
        copy_to_pinned_read_before_synchronize, "aten::sum", "aten::copy_", "the host", sanitizer_sees=False
    ),
    "non_blocking .to('cpu') read before synchronize (127612)": RaceShape(
        non_blocking_to_cpu_read_before_synchronize, "aten::sum", "aten::_to_copy", "the host", sanitizer_sees=False
    ),
    "pinned source overwritten before its copy is ordered": RaceShape(
        pinned_source_overwritten_before_the_copy_ran, "aten::fill_", "aten::_to_copy", "the host", sanitizer_sees=False
    ),
    "two streams write one tensor": RaceShape(two_streams_write_one_tensor, "aten::mul_", "aten::add_", "side stream", sanitizer_sees=True),
    ".item() of a side-stream result": RaceShape(
        value_read_on_the_default_stream, "aten::_local_scalar_dense", "aten::sum", "default stream", sanitizer_sees=True
    ),
    "freed without record_stream, then reused": RaceShape(
        freed_while_another_stream_reads_it, "torch.zeros", "aten::mul", "default stream", sanitizer_sees=False
    ),
}
