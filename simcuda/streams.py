"""Streams, events and the accesses the simulated device's work makes, ordered by CUDA's rules
(ordering.py): `torch.cuda.Stream` / `Event` / `stream()` / `current_stream()` / `synchronize()`
answered with real identities, and each op on the simulated device recorded as an access by the
current stream (or the host) to the storages it reads and writes.

Copies follow PyTorch's documentation of `Tensor.to` / `copy_` with `non_blocking` and of pinned
memory (the pin_memory / non_blocking tutorial): device to host with `non_blocking=True` into
pinned memory is a stream write the host must wait for before reading it; host to device from
pinned memory with `non_blocking=True` is a stream read of the host buffer, which the host must
not overwrite before it is ordered; any other copy returns when the host side is done (device to
host: the host waited for the stream; host to device from pageable memory: the host read it).
Calls that hand a value to Python (`.item()`, `.tolist()`, printing, `bool(t)`) wait for the
stream as CUDA's do. The host's own accesses are tracked only on the host buffers of such copies:
the CPU data behind a simulated tensor is device memory here, which autograd reads on the CPU.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from simcuda import rules
from simcuda.allocations import caller_frame
from simcuda.ordering import HOST, Access, Ordering, ReusedMemoryRace, StreamRace
from simcuda.state import OPEN_SIMULATIONS, Devices
from simcuda.tensor import SimulatedTensor
from simcuda.unsupported import SimulationUnsupported

if TYPE_CHECKING:
    from simcuda.pinning import PinnedStorages

# Ops that move data between the host and a device (or between devices); the destination decides.
_COPIES = frozenset({"aten::_to_copy", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize"})


_SWEEP_EVERY = 4096  # storages recorded between two sweeps of the freed ones


def _where() -> tuple[str, int, str] | None:
    frame = caller_frame()
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


class StreamTable:
    """A simulation's streams: the default and current stream of each device, the ordering of
    their work and of the host's, and the host buffers that copies shared with a stream."""

    def __init__(self, devices: Devices, pinned: PinnedStorages | None = None) -> None:
        self.devices = devices
        self.ordering = Ordering()
        self.pinned = pinned
        self._count = 0
        self._default: dict[int, SimulatedStream] = {}
        self._current: dict[int, SimulatedStream] = {}
        self.host_buffers: set[int] = set()  # CPU storages a copy shared with a stream
        self._alive: dict[int, StorageWeakRef] = {}  # storage key -> the storage, while it lives
        # Off until a second participant can exist (a side stream, an asynchronous copy): until then
        # the default streams' work is ordered with the host by construction, and tracking it would
        # cost every op (bench/README.md). What it queued by then counts as one write per storage
        # at the arming point, pending for the host unless the host waited for it since.
        self.armed = False
        self._queued: dict[int, int] = {}  # per device, ops queued before tracking ...
        self._waited: dict[int, int] = {}  # ... and how many of them the host waited for
        self._arming_seq: dict[int, int] = {}
        # The caching allocator's per-stream reuse: the stream each tracked block was made on, the
        # streams record_stream declared for it, and per stream the blocks freed while another
        # stream's access was still queued (with their sizes), which its next allocation may take.
        self._made_on: dict[int, int] = {}
        self._recorded: dict[int, set[int]] = {}
        self._reusable: dict[int, list[tuple[int, list[Access]]]] = {}

    def key(self, tensor: torch.Tensor) -> int:
        """The storage's key: its address, remembered with a weak reference to the storage."""
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key not in self._alive:
            self._alive[key] = StorageWeakRef(storage)
            if len(self._alive) % _SWEEP_EVERY == 0:
                self._sweep()
        return key

    def access(self, participant: int, keys: tuple[int, ...], write: bool, op: str, where: Any) -> None:
        """ordering.access, where a race is checked once more against a storage freed since its
        record (CPU memory reuse put a new storage at its address: two storages, no race)."""
        try:
            self.ordering.access(participant, keys, write, op, where)
        except StreamRace as race:
            if not self._alive[race.storage].expired():
                raise
            self._forget(race.storage)
            self.ordering.access(participant, keys, write, op, where)

    def allocate(self, stream: int, data: torch.Tensor, op: str, where: Any) -> None:
        """A new block on `stream`: the caching allocator may hand it a block freed on that stream
        while another stream's access was still queued (a race unless ordered since). Its own free
        is watched from here on."""
        size = data.untyped_storage().nbytes()
        freed = self._reusable.get(stream, [])
        for _, accesses in [block for block in freed if size <= block[0]]:  # blocks it may take
            for earlier in accesses:
                if not self.ordering.ordered_after(stream, earlier):
                    current = Access(stream, self.ordering.clocks[stream][stream], op, True, where)
                    raise ReusedMemoryRace(current, earlier, self.ordering.names)
        # Those it could take were ordered: reused or not, they hold no hazard any more.
        self._reusable[stream] = [block for block in freed if size > block[0]]
        self._watch(self.key(data), data, stream)

    def _watch(self, key: int, data: torch.Tensor, stream: int) -> None:
        self._made_on[key] = stream
        storage = data.untyped_storage()
        weakref.finalize(storage, self._freed, key, storage.nbytes()).atexit = False

    def live_blocks(self) -> set[int]:
        """The blocks made (or first met) while tracking that are still alive, by key."""
        return set(self._made_on)

    def _freed(self, key: int, size: int) -> None:
        """The block goes back to its stream's pool at once: what other streams (not declared with
        record_stream) may still be doing to it stays pending for that stream's next allocation."""
        stream = self._made_on.pop(key, None)
        if stream is None:
            return
        declared = self._recorded.pop(key, set())
        pending = [access for access in self.ordering.users(key) if access.participant not in (stream, HOST, *declared)]
        if pending:
            self._reusable.setdefault(stream, []).append((size, pending))

    def record_stream(self, tensor: torch.Tensor, stream: SimulatedStream) -> None:
        """`tensor.record_stream(stream)`: its block is not reused before `stream`'s queued work."""
        if not isinstance(tensor, SimulatedTensor):
            raise RuntimeError("record_stream is only supported for CUDA tensors")  # as on a GPU
        self.arm()
        self._recorded.setdefault(self.device_key(tensor), set()).add(stream.stream_id)

    def _forget(self, key: int) -> None:
        del self._alive[key]
        self.ordering.forget(key)
        self.host_buffers.discard(key)

    def _sweep(self) -> None:
        for key in [key for key, ref in self._alive.items() if ref.expired()]:
            self._forget(key)

    def new_id(self, index: int, kind: str) -> int:
        stream = self._count
        self._count += 1
        # A device has one default stream; a side stream is told apart by the order it was made in.
        name = f"the default stream of cuda:{index}" if kind == "the default" else f"{kind} stream (#{stream}) of cuda:{index}"
        self.ordering.add_stream(stream, name)
        if kind != "the default":
            self.arm()
        return stream

    def arm(self) -> None:
        """Tracking starts: each device's default stream steps once; what it queued before is at
        that step, which the host has waited for only if it synchronized since the work."""
        if self.armed:
            return
        self.armed = True
        for index in {*self._default, *self._queued}:
            stream = self.default(index).stream_id
            self._arming_seq[index] = seq = self.ordering.tick(stream)
            if self._waited.get(index, 0) >= self._queued.get(index, 0):
                self.ordering.host_waits({stream: seq})

    def host_waited(self, index: int, queued: int | None = None) -> None:
        """Before tracking: the host waited for device `index`'s work (up to `queued` ops: an event's)."""
        reached = self._queued.get(index, 0) if queued is None else queued
        self._waited[index] = max(self._waited.get(index, 0), reached)

    def device_key(self, tensor: SimulatedTensor) -> int:
        """A simulated tensor's storage key; one with no history was written before tracking."""
        key = self.key(tensor.elem)
        index = tensor.device.index
        if index in self._arming_seq and key not in self._made_on:  # made before tracking: on the default stream
            stream = self.default(index).stream_id
            self.ordering.assume_written(key, stream, self._arming_seq[index])
            self._watch(key, tensor.elem, stream)
        return key

    def default(self, index: int) -> SimulatedStream:
        if index not in self._default:
            self._default[index] = SimulatedStream(torch.device("cuda", index), _table=self, _kind="the default")
        return self._default[index]

    def current(self, index: int | None = None) -> SimulatedStream:
        index = self.devices.current if index is None else index
        return self._current.get(index) or self.default(index)

    def set_current(self, stream: SimulatedStream) -> None:
        self._current[stream.device_index] = stream

    @contextlib.contextmanager
    def using(self, stream: SimulatedStream | None) -> Iterator[SimulatedStream | None]:
        """`torch.cuda.stream(s)`: `s` current on its device (and that device current) in the block."""
        if stream is None:
            yield None
            return
        previous_device, previous = self.devices.current, self.current(stream.device_index)
        self.devices.set_current(stream.device_index)
        self.set_current(stream)
        try:
            yield stream
        finally:
            self.set_current(previous)
            self.devices.set_current(previous_device)

    def synchronize(self, device: Any = None) -> None:
        """torch.cuda.synchronize(device): the host waits for every stream (of every device: the
        simulation keeps no per-device split of the host's waits, which only orders more)."""
        for index in self._queued:
            self.host_waited(index)
        self.ordering.host_waits_for_all()

    def made(self, op: str, data: torch.Tensor, device: torch.device) -> None:
        """A factory filled `data` on `device`: a write by the device's current stream."""
        if not self.armed:
            self._queued[device.index] = self._queued.get(device.index, 0) + 1
            return
        stream, where = self.current(device.index).stream_id, _where()
        self.allocate(stream, data, op, where)
        self.access(stream, (self.key(data),), True, op, where)

    def host_read(self, tensor: torch.Tensor) -> None:
        """Python reads a simulated tensor's values (.tolist(), printing): a blocking copy to the host."""
        if not self.armed:
            return
        stream = self.current(tensor.device.index)
        self.access(stream.stream_id, (self.device_key(tensor),), False, "a read by the host", _where())
        self.ordering.host_waits(self.ordering.position(stream.stream_id))

    def on_op(self, name: str, call_tensors: list[tuple[torch.Tensor, bool]], out: Any, device: torch.device, non_blocking: bool) -> None:
        """Record the accesses of one op of the simulated device (dispatch.py calls it after the
        kernel ran): by the current stream of the device it ran on, and the host's side of copies."""
        if not self.armed:
            if not (non_blocking and name in _COPIES and self._shares_a_host_buffer(name, call_tensors, out, device)):
                self._note_untracked(call_tensors, out, device)
                return
            self.arm()  # an asynchronous copy: the host and a stream share a buffer
        outputs = [value for value in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(value, torch.Tensor)]
        simulated_inputs = [tensor for tensor, _ in call_tensors if isinstance(tensor, SimulatedTensor)]
        if not simulated_inputs and device.type != "cuda":
            return
        where = _where()
        if name in _COPIES and len(call_tensors) >= 1:
            self._copy(name, call_tensors, outputs, device, non_blocking, where)
            return
        index = device.index if device.type == "cuda" else simulated_inputs[0].device.index
        stream = self.current(index).stream_id
        # An operand on another device (index_put's indices) is copied over by ATen, ordered as copies are.
        reads = tuple({id(tensor.elem): self.device_key(tensor) for tensor in simulated_inputs if tensor.device.index == index}.values())
        for value in outputs:
            if value.untyped_storage()._cdata not in reads:  # a new block, not an input written in place
                self.allocate(stream, value, name, where)
        writes = tuple(self.key(value) for value in outputs)
        written = set(writes)
        self.access(stream, tuple(key for key in reads if key not in written), False, name, where)
        if writes:
            self.access(stream, writes, True, name, where)
        if not outputs and out is not None:  # a value handed to Python (`.item()`, `torch.equal`): CUDA waits for it
            self.ordering.host_waits(self.ordering.position(stream))

    def _note_untracked(self, call_tensors: list[tuple[torch.Tensor, bool]], out: Any, device: torch.device) -> None:
        """Before tracking: which devices have work the host has not waited for. A copy to the host
        or a value handed to Python waited for its device; any other op queued work."""
        hands_a_value = out is not None and not isinstance(out, (torch.Tensor, tuple, list))
        if rules.is_cuda(device) and not hands_a_value:
            index = device.index
            self._queued[index] = self._queued.get(index, 0) + 1
        else:  # `.cpu()`, `.item()`, `torch.equal`: the host waited for the device's stream
            for tensor, _ in call_tensors:
                if isinstance(tensor, SimulatedTensor):
                    self.host_waited(tensor.device.index)

    @staticmethod
    def _ends(name: str, call_tensors: list[tuple[torch.Tensor, bool]], out: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """A copy's source and destination (copy_'s destination is its first argument)."""
        source = call_tensors[0][0] if name == "aten::_to_copy" else call_tensors[-1][0]
        return source, out if isinstance(out, torch.Tensor) else call_tensors[0][0]

    def _shares_a_host_buffer(self, name: str, call_tensors: list[tuple[torch.Tensor, bool]], out: Any, device: torch.device) -> bool:
        """A non_blocking copy that leaves a host buffer to a stream: to pinned memory from the device,
        or from pinned memory to it. From pageable memory CUDA stages the source before returning
        (kornia's `tensor_to` counts on it): the host is done with it, nothing is shared."""
        source, destination = self._ends(name, call_tensors, out)
        if isinstance(source, SimulatedTensor) and device.type != "cuda":
            return self._pinned(destination)
        return device.type == "cuda" and not isinstance(source, SimulatedTensor) and self._pinned(source)

    def _copy(
        self, name: str, call_tensors: list[tuple[torch.Tensor, bool]], outputs: list[torch.Tensor], device: torch.device, non_blocking: bool,
        where: Any,
    ) -> None:
        source, destination = self._ends(name, call_tensors, outputs[0] if outputs else None)
        source_on_device, destination_on_device = isinstance(source, SimulatedTensor), device.type == "cuda"
        source_key = self.device_key(source) if source_on_device else self.key(source)
        destination_key = self.key(destination.elem if isinstance(destination, SimulatedTensor) else destination)
        stream = self.current(device.index if destination_on_device else source.device.index).stream_id
        if source_on_device and not destination_on_device:  # device to host
            self.access(stream, (source_key,), False, name, where)
            self.host_buffers.add(destination_key)
            self.access(stream, (destination_key,), True, name, where)
            if not (non_blocking and self._pinned(destination)):
                self.ordering.host_waits(self.ordering.position(stream))
        elif destination_on_device and not source_on_device:  # host to device
            if non_blocking and self._pinned(source):
                self.host_buffers.add(source_key)
                self.access(stream, (source_key,), False, name, where)
            else:  # staged (pageable) or blocking: the host side is read before the call returns
                self.host_access((source,), False, name)
            self.access(stream, (destination_key,), True, name, where)
            if not non_blocking:
                self.ordering.host_waits(self.ordering.position(stream))
        else:  # device to device: ATen copies on the source's stream, ordered with the destination's both ways
            self._between_devices(source.device.index, device.index, name, source_key, destination_key, where)

    def _between_devices(self, source: int, destination: int, name: str, source_key: int, destination_key: int, where: Any) -> None:
        """ATen's copy between devices (Copy.cu): the source device's current stream first waits for
        the destination's, copies, and the destination's stream then waits for it."""
        ordering = self.ordering
        copying, receiving = self.current(source).stream_id, self.current(destination).stream_id
        if copying != receiving:
            ordering.stream_waits(copying, ordering.position(receiving))
        self.access(copying, (source_key,), False, name, where)
        self.access(copying, (destination_key,), True, name, where)
        if copying != receiving:
            ordering.stream_waits(receiving, ordering.position(copying))

    def _pinned(self, tensor: torch.Tensor) -> bool:
        return self.pinned is not None and self.pinned.is_pinned(tensor)

    def host_op(self, name: str, args: tuple, outputs: tuple) -> None:
        """An op of plain CPU tensors: the host reads its arguments and writes its outputs."""
        written = tuple(value for value in outputs if isinstance(value, torch.Tensor))
        read = tuple(value for value in args if isinstance(value, torch.Tensor) and not any(value is out for out in written))
        self.host_access(read, False, name)
        self.host_access(written, True, name)

    def host_access(self, tensors: tuple[torch.Tensor, ...], write: bool, op: str) -> None:
        """The host reads or writes CPU tensors: checked where a copy shared their storage with a stream."""
        shared = self.host_buffers
        keys = tuple(self.key(tensor) for tensor in tensors if tensor.untyped_storage()._cdata in shared)
        if keys:
            self.access(HOST, keys, write, op, _where())


class SimulatedStream:
    """`torch.cuda.Stream` on the simulated device: a queue whose work is ordered, recorded and
    waited for by ordering.py (the work itself runs at once on the CPU data)."""

    def __init__(self, device: Any = None, priority: int = 0, *, _table: StreamTable | None = None, _kind: str = "a side", **_: Any) -> None:
        table = _table or _table_of_the_open_simulation()
        index = rules.index_of(device, table.devices)
        self._table = table
        self.device_index = index
        self.device = torch.device("cuda", index)
        self.device_type = 1  # c10::DeviceType::CUDA
        self.priority = priority
        self.stream_id = table.new_id(index, _kind)

    @property
    def cuda_stream(self) -> int:
        return 0 if self is self._table._default.get(self.device_index) else 0x51C0 + self.stream_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SimulatedStream) and other.stream_id == self.stream_id

    def __hash__(self) -> int:
        return hash(("simcuda stream", self.stream_id))

    def __repr__(self) -> str:
        return f"<simcuda.streams.SimulatedStream device={self.device} stream_id={self.stream_id}>"

    def __enter__(self) -> SimulatedStream:
        self._using = self._table.using(self)
        return self._using.__enter__()

    def __exit__(self, *exc_info: object) -> None:
        self._using.__exit__(*exc_info)

    def wait_event(self, event: SimulatedEvent) -> None:
        event.wait(self)

    def wait_stream(self, stream: SimulatedStream) -> None:
        ordering = self._table.ordering
        ordering.stream_waits(self.stream_id, ordering.position(stream.stream_id))

    def record_event(self, event: SimulatedEvent | None = None) -> SimulatedEvent:
        event = event or SimulatedEvent()
        event.record(self)
        return event

    def query(self) -> bool:
        self.synchronize()  # True means done: a host that saw it may read the results
        return True

    def synchronize(self) -> None:
        self._table.host_waited(self.device_index)
        ordering = self._table.ordering
        ordering.host_waits(ordering.position(self.stream_id))

    def is_capturing(self) -> bool:
        return False  # no CUDA graph is ever captured (raw CUDA graphs are refused)


class SimulatedEvent:
    """`torch.cuda.Event`: the position of a stream when recorded; waits on one never recorded
    return at once, as CUDA's do."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, **_: Any) -> None:
        self.enable_timing = enable_timing
        self._recorded: tuple[StreamTable, dict[int, int], int, int] | None = None  # table, position, device, ops queued

    def record(self, stream: SimulatedStream | None = None) -> None:
        stream = stream or _current_stream()
        table = stream._table
        self._recorded = (table, table.ordering.position(stream.stream_id), stream.device_index, table._queued.get(stream.device_index, 0))

    def wait(self, stream: SimulatedStream | None = None) -> None:
        stream = stream or _current_stream()
        if self._recorded is not None:
            stream._table.ordering.stream_waits(stream.stream_id, self._recorded[1])

    def synchronize(self) -> None:
        if self._recorded is not None:
            table, position, index, queued = self._recorded
            table.host_waited(index, queued)
            table.ordering.host_waits(position)

    def query(self) -> bool:
        self.synchronize()
        return True

    def elapsed_time(self, end: Any) -> float:
        raise SimulationUnsupported("CUDA event timing (elapsed_time): the simulation has no GPU clock")


def _table_of_the_open_simulation() -> StreamTable:
    if not OPEN_SIMULATIONS:
        raise RuntimeError("a simulated CUDA stream outside simulated_cuda()")
    # An open simulation's streams are a StreamTable (simulation.py makes it); state.py names them
    # by the one method the layers below this one call.
    return cast("StreamTable", OPEN_SIMULATIONS[-1].streams)


def _current_stream() -> SimulatedStream:
    return _table_of_the_open_simulation().current()
