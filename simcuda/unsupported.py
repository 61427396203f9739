"""What the simulation refuses, the error that says so, and the log every refusal lands in.

Nothing here imports torch: the pytest plugin asks whether an error is a refusal in every
session, simulated or not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

# The refusal logs of the simulations running now, innermost last. A refusal is logged when the
# error is made, so one that the code under test catches still counts: a test that met it has not
# been run faithfully, whatever it did with the error.
_OPEN_LOGS: list[list[str]] = []


class SimulationUnsupported(RuntimeError):
    """The simulated CUDA device cannot stand in for `feature`; `where` says where it was met.

    A test that meets it is inconclusive with that reason, never a pass.
    """

    def __init__(self, feature: str, where: str = "") -> None:
        super().__init__(f"{feature} ({where})" if where else feature)
        self.feature = _reraised_feature(feature)
        log_refusal(self.feature)


def _reraised_feature(text: str) -> str:
    """The feature of a refusal made again from a worker's whole traceback (DataLoader's
    `ExceptionWrapper.reraise` passes that text as the only argument): its last line's message."""
    if "\nOriginal Traceback" not in text:
        return text
    last = text.rstrip().splitlines()[-1]
    return last.partition(f"{SimulationUnsupported.__name__}: ")[2] or last


def log_refusal(feature: str) -> None:
    """The innermost running simulation refuses `feature` (an error made here or seen after it)."""
    if _OPEN_LOGS:
        _OPEN_LOGS[-1].append(feature)


def open_log() -> list[str] | None:
    """The refusal log of the innermost simulation running now (None: none runs)."""
    return _OPEN_LOGS[-1] if _OPEN_LOGS else None


@contextlib.contextmanager
def refusals_logged_to(log: list[str]) -> Iterator[None]:
    """Every SimulationUnsupported made in the block (in any thread) appends its feature to `log`."""
    _OPEN_LOGS.append(log)
    try:
        yield
    finally:
        # By identity: list.remove compares by value, and two empty logs (a simcuda:N test's
        # inside the runner's) are equal.
        del _OPEN_LOGS[next(index for index, open_log in enumerate(_OPEN_LOGS) if open_log is log)]


def is_refusal(error: BaseException) -> bool:
    """Whether `error` is the simulation refusing a feature: itself, an error it caused, or the
    real CUDA reached where no stand-in sees (`reached_real_cuda`)."""
    return isinstance(error, SimulationUnsupported) or isinstance(error.__cause__, SimulationUnsupported) or reached_real_cuda(error)


# The real CUDA's answer on a machine without a GPU. Inside a simulation it means a C++ path no
# Python stand-in sees reached it: TorchScript's interpreter initializes CUDA itself before a
# `.to(device)` to a CUDA device dispatches (torch/csrc/jit/runtime/register_prim_ops.cpp,
# to_dispatch), and a binding that opens a device guard before it dispatches (`.contiguous()`,
# `torch.tensor(..., device=)`) does so inside a Python-level torch function, which the function
# mode runs whole with its handler off (F.multi_head_attention_forward, unravel_index).
_REAL_CUDA_ANSWERS = ("Found no NVIDIA driver on your system",)
REAL_CUDA_REACHED = (
    "the real CUDA, reached from C++ where the simulation's modes do not see (TorchScript's `.to(device)`, "
    "or a binding inside a Python-level torch function)"
)
# The same reached on a GPU machine or beside CUDA's stub driver. Outside a simulation these are a
# real GPU's own errors, so they count only while one runs.
_GUARDED_ANSWERS = (
    "GPU device may be out of range",  # CUDA's invalid ordinal on a GPU machine (an H200, torch 2.11); the simulation's own lacks it
    "CUDA driver version is insufficient for CUDA runtime version",  # a machine with CUDA's stub driver and no GPU
    "but its data is not allocated yet",  # a C++ kernel read a simulated tensor's storage (nvJPEG on an H200)
)


def reached_real_cuda(error: BaseException | None) -> bool:
    """Whether `error`, or an error it was raised from, is the real CUDA answering a C++ path the
    simulation did not see (REAL_CUDA_REACHED)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        text = str(error)
        if any(answer in text for answer in _REAL_CUDA_ANSWERS) or _OPEN_LOGS and any(answer in text for answer in _GUARDED_ANSWERS):
            return True
        error = error.__cause__ or error.__context__
    return False


# Ops whose only meaning is a CUDA feature the CPU cannot imitate, by schema name.
UNSUPPORTED_OPS = {
    "image::encode_jpegs_cuda": "nvJPEG (torchvision.io.encode_jpeg on cuda)",
    "image::decode_jpegs_cuda": "nvJPEG (torchvision.io.decode_jpeg on cuda)",
}
