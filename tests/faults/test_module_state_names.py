"""The module-state proxy names what it finds: plain tensors of submodules by dotted name, and
every tensor a move left behind, not only the first."""

from __future__ import annotations

import torch
from torch import nn

from fixtures.proxies.meta_proxy import FINDING, INCONCLUSIVE
from fixtures.proxies.module_state import device_move_check, unregistered_tensors


class PlainTables(nn.Module):
    """Two tensors kept as plain attributes: the kornia-2791 pattern, twice."""

    def __init__(self) -> None:
        super().__init__()
        self.low = torch.zeros(2)
        self.high = torch.ones(2)


class Wrapper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = PlainTables()
        self.own = torch.zeros(1)


def test_plain_tensors_of_submodules_have_dotted_names() -> None:
    assert sorted(unregistered_tensors(Wrapper())) == ["inner.high", "inner.low", "own"]


def test_a_move_names_every_tensor_it_left_behind() -> None:
    result = device_move_check(PlainTables(), "meta")
    assert (result.kind, result.detail) == (FINDING, "after .to('meta'): low is on cpu; high is on cpu")
    assert result.site == "high, low"  # the sweeps' allow-list holds a triage to these names


class TablesThatCannotMoveToMeta(PlainTables):
    """A move that stops half way, as kornia 0.9's samplers do on meta (bool() of a meta bound):
    its plain tables stay behind because the move never finished, not because it forgot them."""

    def _apply(self, fn, recurse=True):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")


def test_a_move_that_cannot_run_is_inconclusive_whatever_it_left_behind() -> None:
    result = device_move_check(TablesThatCannotMoveToMeta(), "meta")
    assert result.kind == INCONCLUSIVE, result
