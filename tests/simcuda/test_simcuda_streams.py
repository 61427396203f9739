"""Missing synchronization on the simulated device (simcuda/streams.py, ordering.py): each race
shape as a racy twin that fails naming both accesses and an ordered twin that passes; the
ordering engine against torch.cuda._sanitizer's own on random stream traces; the runner too."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.cuda._sanitizer import EventHandler

from simcuda import simulated_cuda
from simcuda.ordering import HOST, Ordering, StreamRace
from simcuda.runner import Runner
from tests.helpers import stream_race_shapes
from tests.helpers.stream_race_shapes import SHAPES, RaceShape, side_stream_reads_default_write

HERE = stream_race_shapes.__file__  # the racing line is a body's


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_the_racy_twin_fails_naming_both_accesses(shape: RaceShape) -> None:
    with simulated_cuda(2), pytest.raises(StreamRace) as race:
        shape.body(False)
    message = str(race.value)
    racing, earlier = (message.split(" is reused by ")[::-1] if " is reused by " in message else message.split(" is not ordered after "))
    assert shape.racing_op in racing and shape.racer in racing and f"{HERE}:" in racing, message  # the body's racing line
    assert shape.earlier_op in earlier, message


@pytest.mark.parametrize("body", [shape.body for shape in SHAPES.values()], ids=SHAPES.keys())
def test_the_ordered_twin_passes(body) -> None:
    with simulated_cuda(2):
        body(True)


def test_a_race_on_the_simulated_runner() -> None:
    runner = Runner(2, {}).open()
    try:
        with pytest.raises(StreamRace, match="side stream"):
            side_stream_reads_default_write(False)
    finally:
        runner.close()


def test_streams_and_events_follow_torch_cuda() -> None:
    with simulated_cuda(2) as simulation:
        default = torch.cuda.current_stream()
        side = torch.cuda.Stream()
        assert default == torch.cuda.default_stream() and side != default and default.cuda_stream == 0
        with torch.cuda.stream(side):
            assert torch.cuda.current_stream() == side
        assert torch.cuda.current_stream() == default
        other = torch.cuda.Stream(device=1)
        with torch.cuda.stream(other):  # its device becomes current, as torch.cuda.stream does
            assert simulation.current == 1 and torch.cuda.current_stream() == other
        assert simulation.current == 0
        assert side.query() and torch.cuda.Event().query()  # idle: the work ran at once


# Conformance: on traces of streams only (no host), the ordering engine finds a race exactly where
# torch's CUDA sanitizer (torch.cuda._sanitizer.EventHandler, what TORCH_CUDA_SANITIZER=1 runs on a
# GPU) finds one. Steps: launch(stream, reads, writes), record(event, stream), wait(stream, event),
# synchronize a stream, synchronize the device.
STREAMS, TENSORS, EVENTS = 3, 3, 2
streams = st.integers(0, STREAMS - 1)
tensor_sets = st.frozensets(st.integers(1, TENSORS), max_size=2)
steps = st.one_of(
    st.tuples(st.just("launch"), streams, tensor_sets, tensor_sets),
    st.tuples(st.just("record"), st.integers(0, EVENTS - 1), streams),
    st.tuples(st.just("wait"), streams, st.integers(0, EVENTS - 1)),
    st.tuples(st.just("sync_stream"), streams),
    st.tuples(st.just("sync_device"),),
)


def first_race_by_the_sanitizer(trace: list[tuple]) -> int | None:
    handler = EventHandler()
    for stream in range(1, STREAMS):
        handler._handle_stream_creation(stream)
    for event in range(EVENTS):
        handler._handle_event_creation(event)
    for pointer in range(1, TENSORS + 1):
        handler._handle_memory_allocation(pointer)
    for position, step in enumerate(trace):
        if step[0] == "launch":
            _, stream, reads, writes = step
            reads = reads - writes
            if handler._handle_kernel_launch(stream, set(reads), set(writes), set(), "op", {p: [] for p in reads | writes}):
                return position
        elif step[0] == "record":
            handler._handle_event_record(step[1], step[2])
        elif step[0] == "wait":
            handler._handle_event_wait(step[2], step[1])
        elif step[0] == "sync_stream":
            handler._handle_stream_synchronization(step[1])
        else:
            handler._handle_device_synchronization()
    return None


def first_race_by_the_ordering(trace: list[tuple]) -> int | None:
    """The step at which the ordering raises (a test stops there; the sanitizer reports and goes on)."""
    ordering = Ordering()
    for stream in range(STREAMS):
        ordering.add_stream(stream, f"stream {stream}")
    events: dict[int, dict[int, int]] = {}
    for position, step in enumerate(trace):
        try:
            if step[0] == "launch":
                _, stream, reads, writes = step
                ordering.access(stream, tuple(reads - writes), False, "op", None)
                ordering.access(stream, tuple(writes), True, "op", None)
            elif step[0] == "record":
                events[step[1]] = ordering.position(step[2])
            elif step[0] == "wait":
                ordering.stream_waits(step[1], events.get(step[2], {}))
            elif step[0] == "sync_stream":
                ordering.host_waits(ordering.position(step[1]))
            else:
                ordering.host_waits_for_all()
        except StreamRace:
            return position
    return None


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(st.lists(steps, max_size=14))
def test_the_ordering_finds_the_first_race_torchs_sanitizer_finds(trace: list[tuple]) -> None:
    assert first_race_by_the_ordering(trace) == first_race_by_the_sanitizer(trace)


def test_the_host_is_a_participant_the_sanitizer_does_not_have() -> None:
    ordering = Ordering()
    ordering.add_stream(0, "stream 0")
    ordering.access(0, (7,), True, "copy to the host", None)
    with pytest.raises(StreamRace, match="read by sum on the host"):
        ordering.access(HOST, (7,), False, "sum", None)
    ordering.host_waits(ordering.position(0))
    ordering.access(HOST, (7,), False, "sum", None)


def test_a_non_blocking_copy_from_pageable_memory_shares_nothing_with_the_stream() -> None:
    """CUDA stages a pageable source before the call returns (kornia's `tensor_to` counts on it):
    the host may overwrite it at once, and tracking does not start for such a copy."""
    with simulated_cuda(2) as simulation:
        source = torch.ones(4)
        moved = source.to("cuda", non_blocking=True)
        source.fill_(3)
        assert not simulation.streams.armed and moved.cpu().tolist() == [1.0] * 4


def test_a_factory_on_another_stream_reads_only_its_arguments_shape() -> None:
    """empty_like / new_zeros take a shape, dtype and device from a tensor, never its memory (as
    torch.cuda._sanitizer has it): made on a side stream while the default stream writes that
    tensor, they race with nothing; a real read there does."""
    with simulated_cuda(2):
        x = torch.ones(4, device="cuda")
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.empty_like(x)
            x.new_zeros(3)
            with pytest.raises(StreamRace, match="aten::clone"):
                x.clone()
