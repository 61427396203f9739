"""Batches as a collate function hands them to the DataLoader's pinning: a tuple of tensors (the
upstream reproducer) and a tuple inside a dict. Each shows the bug on every affected release (a
namedtuple, which every release kept, would not: it is the fault test's clean case)."""

from __future__ import annotations

from collections.abc import Callable

import torch

BATCHES: dict[str, Callable[[], object]] = {
    "tuple": lambda: (torch.rand(3, 10), torch.rand(3, 3)),
    "tuple-in-dict": lambda: {"pair": (torch.rand(3, 10), torch.rand(3, 3)), "label": torch.tensor([1])},
}


def tensors_of(batch: object) -> list[torch.Tensor]:
    if isinstance(batch, torch.Tensor):
        return [batch]
    values = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (list, tuple)) else []
    return [tensor for value in values for tensor in tensors_of(value)]


class Batches(torch.utils.data.Dataset):
    """Two items, each already a batch of the given kind (the DataLoader's collate returns it)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> object:
        return BATCHES[self.kind]()


def first(batch: list) -> object:
    """A collate function returning the one item of a batch of size 1, as in the upstream report."""
    return batch[0]
