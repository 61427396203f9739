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
        self.feature = feature
        if _OPEN_LOGS:
            _OPEN_LOGS[-1].append(feature)


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
    """Whether `error` is the simulation refusing a feature: itself, or an error it caused."""
    return isinstance(error, SimulationUnsupported) or isinstance(error.__cause__, SimulationUnsupported)


# Ops whose only meaning is a CUDA feature the CPU cannot imitate, by schema name.
UNSUPPORTED_OPS = {
    "image::encode_jpegs_cuda": "nvJPEG (torchvision.io.encode_jpeg on cuda)",
    "image::decode_jpegs_cuda": "nvJPEG (torchvision.io.decode_jpeg on cuda)",
}
