"""The oracle: did pinning a batch keep every container's type? pytorch/pytorch issue 48419: the
DataLoader's pin helper rebuilt a plain tuple as a list ("Backwards compatibility"), so a batch
that went in as a tuple came out of DataLoader(pin_memory=True) as a list."""

from __future__ import annotations

import torch

from fixtures.known_bugs.outcomes import observe


def container_types(batch: object, where: str = "batch") -> list[tuple[str, type]]:
    """(where, type) of the batch and of every container inside it, tensors left out."""
    if isinstance(batch, torch.Tensor):
        return []
    found = [(where, type(batch))]
    if isinstance(batch, dict):
        for key, value in batch.items():
            found += container_types(value, f"{where}[{key!r}]")
    elif isinstance(batch, (list, tuple)):
        for index, value in enumerate(batch):
            found += container_types(value, f"{where}[{index}]")
    return found


def check_containers_kept(original: object, pinned: object, operation: str) -> None:
    """BugObserved where pinning changed a container's type (a tuple made a list)."""
    before, after = container_types(original), container_types(pinned)
    changed = [f"{where}: {kind.__name__} became {other.__name__}" for (where, kind), (_, other) in zip(before, after) if kind is not other]
    observe(bool(changed) or len(before) != len(after), f"{operation} changed the batch's containers: {'; '.join(changed) or 'their number'}")
