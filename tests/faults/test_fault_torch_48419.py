"""torch-48419's oracle catches the tuple-to-list rebuild where the suite really calls torch: the
DataLoader's pin helper, with its tuple branch put back as torch 2.6 to 2.9 had it, through the
suite's own CPU proxy; the clean helper and a namedtuple pass."""

from __future__ import annotations

from collections import namedtuple

import pytest
import torch
from torch.utils.data._utils import pin_memory as pin_module

from fixtures.known_bugs.outcomes import BugObserved
from simcuda.pinning import simulated_pinning
from suites.torch_48419_pin_memory_tuple import test_pin_memory_tuple as suite
from suites.torch_48419_pin_memory_tuple.batches import BATCHES
from suites.torch_48419_pin_memory_tuple.oracle import check_containers_kept

ORIGINAL_PIN = pin_module.pin_memory


def pin_with_the_old_tuple_branch(data, device=None):
    """The helper as before the fix: a plain tuple rebuilt as a list ("Backwards compatibility")."""
    if isinstance(data, tuple) and not hasattr(data, "_fields"):
        return [pin_with_the_old_tuple_branch(sample, device) for sample in data]
    if isinstance(data, dict):
        return {key: pin_with_the_old_tuple_branch(value, device) for key, value in data.items()}
    return ORIGINAL_PIN(data, device)


@pytest.mark.catches(
    "suites/torch_48419_pin_memory_tuple/oracle.py::check_containers_kept",
    "suites/torch_48419_pin_memory_tuple/test_pin_memory_tuple.py::test_pin_helper_keeps_containers_cpu_proxy",
)
@pytest.mark.parametrize("kind", ["tuple", "tuple-in-dict"])
def test_fault_tuple_rebuilt_as_a_list(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.setattr(suite, "pin_batch", pin_with_the_old_tuple_branch)  # where the suite calls torch
    with simulated_pinning(), pytest.raises(BugObserved, match="tuple became list"):
        suite.test_pin_helper_keeps_containers_cpu_proxy(None, kind)


@pytest.mark.parametrize("kind", BATCHES)
def test_the_clean_helper_passes(kind: str) -> None:
    with simulated_pinning():
        suite.test_pin_helper_keeps_containers_cpu_proxy(None, kind)


def test_a_namedtuple_the_old_helper_kept_passes() -> None:
    pair = namedtuple("Pair", ["image", "target"])(torch.rand(2), torch.rand(2))
    with simulated_pinning():
        check_containers_kept(pair, pin_with_the_old_tuple_branch(pair), "the old pin helper")


def test_the_oracle_names_the_container_that_changed() -> None:
    batch = {"pair": (torch.zeros(1), torch.zeros(1))}
    with pytest.raises(BugObserved, match=r"batch\['pair'\]: tuple became list"):
        check_containers_kept(batch, {"pair": [torch.zeros(1), torch.zeros(1)]}, "a pin")
    check_containers_kept(batch, {"pair": (torch.ones(1), torch.ones(1))}, "a pin")  # values may differ: types only
