"""Which accesses to a tensor's memory are ordered before which, by CUDA's rules, and the race that
two conflicting accesses with no order between them make. Pure: no torch.

Participants are the streams and the host. Each keeps a vector clock (what it knows of every
participant's progress), as torch.cuda._sanitizer keeps one per stream; the host is one more
participant here, so a `non_blocking` copy read before a synchronize is a race too:

- work on one participant is ordered (a stream's queue, the host's program order);
- the host launches all work: a launch is ordered after everything the host did or waited for;
- an event records a stream's position; `wait_event` / `wait_stream` order a stream after it;
- the host waits for a stream, an event or the device (`synchronize`, and the calls that block
  until the data is back: `.item()`, `.cpu()` without non_blocking, printing ...).

Every operation runs at once on the CPU data (the values are right); what this adds is whether
the program *ordered* its accesses as CUDA needs them ordered. A read and a write (or two writes)
of one storage by two participants, neither ordered after the other, raise StreamRace naming both
accesses. It says nothing about timing: a race here may never corrupt data on a given GPU.
"""

from __future__ import annotations

from typing import NamedTuple

HOST = -1  # the host's participant id; streams are numbered from 0


class Access(NamedTuple):
    participant: int
    seq: int  # the participant's own count at this access
    op: str
    write: bool
    where: tuple[str, int, str] | None  # file, line, function of the code that asked

    def describe(self, names: dict[int, str]) -> str:
        place = "<torch internals>" if self.where is None else "{}:{} in {}".format(*self.where)
        return f"{'write' if self.write else 'read'} by {self.op} on {names[self.participant]} ({place})"


class StreamRace(AssertionError):
    """Two conflicting accesses to one storage, by two participants, with no ordering between them
    (an AssertionError: the code under test raced, the simulation did not fail)."""

    def __init__(self, current: Access, previous: Access, names: dict[int, str], storage: int = 0) -> None:
        super().__init__(
            f"unsynchronized access to one tensor's memory: {current.describe(names)} is not ordered after the "
            f"{previous.describe(names)} (add a wait_stream / wait_event / synchronize between them, or record_stream)"
        )
        self.current, self.previous, self.storage = current, previous, storage


class ReusedMemoryRace(StreamRace):
    """A block freed while another stream's access to it was still queued, handed by the caching
    allocator to the next allocation on the stream it was made on (no record_stream)."""

    def __init__(self, current: Access, previous: Access, names: dict[int, str], storage: int = 0) -> None:
        AssertionError.__init__(
            self,
            f"memory freed while the {previous.describe(names)} was still queued is reused by the {current.describe(names)}: "
            f"the caching allocator hands a freed block to the next allocation on its own stream (call "
            f"tensor.record_stream(stream) for the other stream, or order it before the free)",
        )
        self.current, self.previous, self.storage = current, previous, storage


class Ordering:
    """The vector clocks of every participant, the events' recorded clocks, and per storage the
    last write and each participant's latest read since it."""

    def __init__(self) -> None:
        self.clocks: dict[int, dict[int, int]] = {HOST: {HOST: 0}}
        self.names: dict[int, str] = {HOST: "the host"}
        self._writes: dict[int, Access] = {}
        self._reads: dict[int, dict[int, Access]] = {}

    def add_stream(self, stream: int, name: str) -> None:
        """A new stream: made by the host, it knows what the host knows."""
        self.clocks[stream] = {**self.clocks[HOST], stream: 0}
        self.names[stream] = name

    def _launch(self, stream: int) -> dict[int, int]:
        """Work the host puts on `stream` is ordered after all the host did and waited for."""
        clock = self.clocks[stream]
        _merge(clock, self.clocks[HOST])
        return clock

    def access(self, participant: int, storages: tuple[int, ...], write: bool, op: str, where: tuple[str, int, str] | None) -> None:
        """`participant` reads or writes each storage (by key); StreamRace on the first conflict."""
        clock = self.clocks[HOST] if participant == HOST else self._launch(participant)
        clock[participant] = seq = clock[participant] + 1
        current = Access(participant, seq, op, write, where)
        for storage in storages:
            previous = self._writes.get(storage)
            if write:
                reads = self._reads.get(storage)
                for earlier in reads.values() if reads else (() if previous is None else (previous,)):
                    self._check(clock, current, earlier, storage)
                self._writes[storage] = current
                self._reads[storage] = {}
            else:
                if previous is not None:
                    self._check(clock, current, previous, storage)
                self._reads.setdefault(storage, {})[participant] = current

    def _check(self, clock: dict[int, int], current: Access, earlier: Access, storage: int) -> None:
        if earlier.participant != current.participant and clock.get(earlier.participant, 0) < earlier.seq:
            raise StreamRace(current, earlier, self.names, storage)

    def position(self, stream: int) -> dict[int, int]:
        """`event.record(stream)`: the stream's clock when the work queued so far is done."""
        return dict(self._launch(stream))

    def stream_waits(self, stream: int, position: dict[int, int]) -> None:
        """`stream.wait_event(e)` / `wait_stream`: later work on `stream` waits for `position`."""
        _merge(self._launch(stream), position)

    def host_waits(self, position: dict[int, int]) -> None:
        """The host blocks until `position` is reached (a stream's or an event's synchronize)."""
        _merge(self.clocks[HOST], position)

    def host_waits_for_all(self) -> None:
        """`torch.cuda.synchronize()`: every stream's queued work is done."""
        for stream in list(self.clocks):
            if stream != HOST:
                self.host_waits(self.position(stream))

    def tick(self, stream: int) -> int:
        """One step of `stream` with no access: the point all earlier untracked work ends at."""
        clock = self._launch(stream)
        clock[stream] += 1
        return clock[stream]

    def assume_written(self, storage: int, stream: int, seq: int) -> None:
        """A storage with no history was last written by `stream` at `seq` (work before tracking)."""
        if storage not in self._writes:
            self._writes[storage] = Access(stream, seq, "work queued before stream tracking started", True, None)

    def ordered_after(self, participant: int, earlier: Access) -> bool:
        return earlier.participant == participant or self.clocks[participant].get(earlier.participant, 0) >= earlier.seq

    def forget(self, storage: int) -> None:
        """The storage was freed: its history ends (allocations.py decides what reuse means)."""
        self._writes.pop(storage, None)
        self._reads.pop(storage, None)

    def users(self, storage: int) -> list[Access]:
        """The storage's last write and its latest reads since (what a free must wait for)."""
        last = self._writes.get(storage)
        return [*([] if last is None else [last]), *self._reads.get(storage, {}).values()]


def _merge(clock: dict[int, int], other: dict[int, int]) -> None:
    for participant, seq in other.items():
        if clock.get(participant, 0) < seq:
            clock[participant] = seq
