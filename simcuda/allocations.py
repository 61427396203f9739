"""The simulation's log: every tensor an op creates and every copy between devices."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import NamedTuple

import torch

# Frames inside these folders are machinery, not the caller a reader wants to see.
_MACHINERY = (str(Path(torch.__file__).parent), str(Path(__file__).parent), str(Path(sys.modules["contextlib"].__file__)))


class Allocation(NamedTuple):  # a NamedTuple: one is made for every tensor an op creates
    """One new tensor: the op that made it, where, what, and the first caller outside torch
    (`where`: file, line, function; `caller` says it as text, made only when read).

    `source` is set for transfers (`.to`, `.cuda`, `.cpu`, `copy_` from another device).
    """

    op: str
    device: str
    shape: tuple[int, ...]
    dtype: str
    where: tuple[str, int, str] | None
    source: str | None = None

    @property
    def caller(self) -> str:
        """`file:line in function`, or `<torch internals>` when no frame is outside torch."""
        return "<torch internals>" if self.where is None else "{}:{} in {}".format(*self.where)

    @property
    def is_transfer(self) -> bool:
        return self.source is not None


@functools.cache
def _is_machinery(filename: str) -> bool:
    return filename.startswith(_MACHINERY)


def caller_frame(start: FrameType | None = None) -> FrameType | None:
    """The innermost frame outside torch and this package, searched from `start` (default: the
    frame calling this) outward: the code that asked for what runs. A caller that knows a frame
    nearer the answer passes it: every frame stepped over costs a frame object in Python 3.11."""
    frame = sys._getframe(1) if start is None else start
    while frame is not None and _is_machinery(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def caller_summary() -> str:
    """`file:line in function` of the innermost frame outside torch and this package."""
    frame = caller_frame()
    if frame is None:
        return "<torch internals>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


@functools.cache
def text_of(value: torch.device | torch.dtype) -> str:
    return str(value).removeprefix("torch.")  # once per device or dtype: the log asks per op


Noted = tuple  # what an op notes of a tensor it made: op, device, shape, dtype, where, source


def note(
    log: list[Noted], op: str, tensor: torch.Tensor, device: torch.device, source: torch.device | None = None, start: FrameType | None = None
) -> None:
    """Every op notes the raw facts (the caller's frame cannot wait); an `Allocation` is made of
    them only when read (`as_allocation`)."""
    frame = caller_frame(start)
    where = None if frame is None else (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    log.append((op, device, tensor.shape, tensor.dtype, where, source))


def as_allocation(noted: Noted) -> Allocation:
    op, device, shape, dtype, where, source = noted
    return Allocation(op, text_of(device), tuple(shape), text_of(dtype), where, None if source is None else text_of(source))


def foreign(log: Sequence[Noted], allowed: set[str]) -> list[Allocation]:
    """Entries on a device outside `allowed`: made, or copied to, where the test never asked (read
    from the noted facts: a test's end asks this of every entry, and few are foreign)."""
    return [as_allocation(entry) for entry in log if text_of(entry[1]) not in allowed]


SHOWN = 3  # allocations named in a description; the rest are counted
_DIRECTORIES = re.compile(r"^.*/(?=[^/]+/[^/]+:\d+ in )")  # keep "package/file.py:12 in f"


def describe(entries: Sequence[Allocation]) -> str:
    """One line naming the first few entries (op, shape, device, caller outside torch) and counting
    the rest: "2 allocation(s) on a device the test never asked for: torch.tensor [4, 3] on cuda:0
    at augmentation/planckian_jitter.py:80 in __init__; ..."."""
    shown = "; ".join(
        f"{entry.op} {list(entry.shape)} on {entry.device} at {_DIRECTORIES.sub('', entry.caller)}" for entry in entries[:SHOWN]
    )
    more = f" (+{len(entries) - SHOWN} more)" if len(entries) > SHOWN else ""
    return f"{len(entries)} allocation(s) on a device the test never asked for: {shown}{more}"
