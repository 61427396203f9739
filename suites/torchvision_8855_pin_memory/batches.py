"""DataLoader material: a dataset of TVTensor samples, the collate functions under test, and a
walk over a (pinned) batch to the TVTensors in it. Module-level, so DataLoader workers can
pickle them."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch.utils.data import Dataset

from fixtures.known_bugs.library_api import library_api

from .samples import SAMPLES

tv_tensors = library_api("torchvision.tv_tensors", first_release="0.16.0")

BATCH_SIZE = 2


class TVTensorSamples(Dataset):
    """Each item: {type name: a fresh sample of that TVTensor type}."""

    def __init__(self, length: int = 2 * BATCH_SIZE) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {kind: make() for kind, make in SAMPLES.items()}


def as_list(batch: list[dict]) -> list[dict]:
    """Samples left as they are: the batch is the list."""
    return batch


def dict_of_lists(batch: list[dict]) -> dict[str, list[torch.Tensor]]:
    """Per key, the list of samples (what detection pipelines do with variable-size targets)."""
    return {kind: [sample[kind] for sample in batch] for kind in batch[0]}


def join_and_rewrap(batch: list[dict]) -> dict[str, torch.Tensor]:
    """Per key, one tensor re-wrapped as its TVTensor type: boxes and key points (N x 4, N x 2)
    concatenated, the rest stacked. Joining returns a plain tensor by design; tv_tensors.wrap
    restores type and metadata."""
    return {kind: tv_tensors.wrap(_join([sample[kind] for sample in batch]), like=batch[0][kind]) for kind in batch[0]}


_ROWS_OF_COORDINATES = tuple(t for t in (tv_tensors.BoundingBoxes, getattr(tv_tensors, "KeyPoints", None)) if t)


def _join(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat(tensors) if isinstance(tensors[0], _ROWS_OF_COORDINATES) else torch.stack(tensors)


COLLATES: dict[str, Callable[[list[dict]], object]] = {
    "as_list": as_list,
    "dict_of_lists": dict_of_lists,
    "join_and_rewrap": join_and_rewrap,
}


def tensors_by_kind(batch: object, kind: str | None = None) -> Iterator[tuple[str, torch.Tensor]]:
    """(type name the sample was made as, tensor) for every tensor in a nested batch."""
    if isinstance(batch, torch.Tensor):
        yield kind or "?", batch
    elif isinstance(batch, dict):
        for key, value in batch.items():
            yield from tensors_by_kind(value, key)
    elif isinstance(batch, (list, tuple)):
        for value in batch:
            yield from tensors_by_kind(value, kind)
