"""The simulation's log: every tensor an op creates and every copy between devices."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import torch

# Frames inside these folders are machinery, not the caller a reader wants to see.
_MACHINERY = (str(Path(torch.__file__).parent), str(Path(__file__).parent), str(Path(sys.modules["contextlib"].__file__)))


@dataclass(frozen=True)
class Allocation:
    """One new tensor: the op that made it, where, what, and the first caller outside torch.

    `source` is set for transfers (`.to`, `.cuda`, `.cpu`, `copy_` from another device).
    """

    op: str
    device: str
    shape: tuple[int, ...]
    dtype: str
    caller: str
    source: str | None = None

    @property
    def is_transfer(self) -> bool:
        return self.source is not None


def caller_frame() -> FrameType | None:
    """The innermost frame outside torch and this package: the code that asked for what runs."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_MACHINERY):
        frame = frame.f_back
    return frame


def caller_summary() -> str:
    """`file:line in function` of the innermost frame outside torch and this package."""
    frame = caller_frame()
    if frame is None:
        return "<torch internals>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


@functools.cache
def _text(value: torch.device | torch.dtype) -> str:
    return str(value).removeprefix("torch.")  # once per device or dtype: record runs for every op


def record(log: list[Allocation], op: str, tensor: torch.Tensor, device: torch.device, source: torch.device | None = None) -> None:
    log.append(Allocation(op, _text(device), tuple(tensor.shape), _text(tensor.dtype), caller_summary(), None if source is None else _text(source)))


def foreign(log: Sequence[Allocation], allowed: set[str]) -> list[Allocation]:
    """Entries on a device outside `allowed`: made, or copied to, where the test never asked."""
    return [entry for entry in log if entry.device not in allowed]


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
