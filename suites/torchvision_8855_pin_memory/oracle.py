"""The oracle: did an operation that should keep a TVTensor return the same subclass with the
same metadata (format, canvas_size, clamping_mode ...)?"""

from __future__ import annotations

import torch

from fixtures.known_bugs.outcomes import BugObserved
from simcuda import gpu_vars


def metadata(tensor: torch.Tensor) -> dict[str, object]:
    """A TVTensor's metadata: the attributes it carries besides the data (format, canvas_size);
    on the simulated runner without the simulation's own fields (`gpu_vars`: `vars` on a GPU)."""
    return gpu_vars(tensor)


def check_kept(original: torch.Tensor, result: torch.Tensor, operation: str) -> None:
    """BugObserved when `result` lost `original`'s subclass or any of its metadata."""
    if type(result) is not type(original):
        raise BugObserved(
            f"{operation} turned {type(original).__name__} into {type(result).__name__}: subclass lost"
        )
    if metadata(result) != metadata(original):
        raise BugObserved(
            f"{operation} kept {type(original).__name__} but changed its metadata "
            f"from {metadata(original)} to {metadata(result)}"
        )
