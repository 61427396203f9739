"""What made a test fail, read from its traceback: the innermost frame in the package under test
and the error. Two failures with the same cause at two releases are one finding. Pure."""

from __future__ import annotations

import re
from typing import NamedTuple

# A native traceback's frame line: `  File "/path/kornia/x.py", line 12, in forward`.
FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+, in (?P<function>\S+)', re.MULTILINE)
# The error line ending a traceback: `RuntimeError: ...`, `torch.AcceleratorError: ...`.
ERROR = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failed)): ?(?P<message>.*)$")
# Numbers that differ between cases of one cause (shapes, sizes, indices); a device's index is kept.
NUMBER = re.compile(r"(?<![:\w])\d+(?:\.\d+)?")
# simcuda's failure of a test that allocated on a device it never asked for names the first
# allocation's op, device and caller (outside torch): "... torch.tensor [4, 3] on cuda:0 at
# augmentation/planckian_jitter.py:80 in __init__".
FOREIGN = re.compile(
    r"allocation\(s\) on a device the test never asked for: (?P<op>\S+) \[[^\]]*\] on (?P<device>\S+) at (?P<caller>\S+?):\d+ in (?P<function>\w+)"
)
MESSAGE_LENGTH = 160


class Cause(NamedTuple):
    where: str  # "kornia/augmentation/random_generator/_2d/linear_illumination.py:forward", or "(test) <file>:<function>"
    error: str  # "RuntimeError: Expected all tensors to be on the same device, ..." (numbers masked)


def error_line(text: str) -> str:
    """The last error line of a traceback, its numbers masked; else the text's first line."""
    for line in reversed(text.splitlines()):
        match = ERROR.match(line.strip())
        if match:
            message = NUMBER.sub("N", match["message"].strip())
            return f"{match['type'].rsplit('.', 1)[-1]}: {message}"[:MESSAGE_LENGTH]
    first = next((line.strip() for line in text.splitlines() if line.strip()), "(no message)")
    return NUMBER.sub("N", first)[:MESSAGE_LENGTH]


def package_relative(path: str, roots: tuple[str, ...], helpers: tuple[str, ...] = ()) -> str | None:
    """The frame's file under one of the installed package's roots (its folder on sys.path), or
    None; None too for the package's own test helpers (`helpers`, relative: "kornia/testing/"),
    whose frames are the test's assertions, not the library's code."""
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if path.startswith(prefix):
            relative = path[len(prefix) :]
            return None if relative.startswith(helpers) else relative
    return None


def cause_of(text: str, roots: tuple[str, ...], installed: tuple[str, ...] = (), message: str = "", helpers: tuple[str, ...] = ()) -> Cause:
    """The innermost frame under `roots` (outside `helpers`) and the error. A failure that never
    reached the package (an assertion in the test itself) is placed at the innermost frame of the
    test's own code, outside `roots` and every `installed` folder (Python's, the harness's):
    "(test) <folder>/<file>:<function>"; an allocation simcuda found on a device the test never
    asked for, at the allocation's caller."""
    foreign = FOREIGN.search(text or message)
    if foreign:  # no traceback: the test passed, and its allocations failed it
        error = f"allocation on a device the test never asked for: {foreign['op']} on {foreign['device']}"
        return Cause(f"{foreign['caller']}:{foreign['function']}", error)
    frames = [(match["path"], match["function"]) for match in FRAME.finditer(text)]
    inside = [(relative, function) for path, function in frames if (relative := package_relative(path, roots, helpers))]
    own = [(path, function) for path, function in frames if package_relative(path, roots + installed) is None]
    if inside:
        relative, function = inside[-1]
        where = f"{relative}:{function}"
    elif own:
        path, function = own[-1]
        where = f"(test) {'/'.join(path.split('/')[-2:])}:{function}"
    else:
        where = "(no traceback)"
    return Cause(where, error_line(text or message))
