"""sam2-460's oracles flag the faults they exist for, and pass correct runs (CPU, no compile)."""

from __future__ import annotations

import pytest
import torch

from fixtures.outcomes import BugObserved, Inconclusive
from suites.sam2_460_cudagraph.oracles import (
    OVERWRITE_TEXT,
    check_against_eager,
    check_kept_outputs_against_eager,
    check_position_cache_follows_device,
)
from suites.sam2_460_cudagraph.position_encodings import CHANNELS, FRAME_SIZES, CachedSinePosition, encoder_and_eager_twin, frames

CAPACITY = CHANNELS * max(FRAME_SIZES) ** 2


class ReusedBufferRunner:
    """A faked CUDA-graph replay: every result is written into the one buffer the previous call
    returned, so whoever kept an earlier result sees it change."""

    def __init__(self, function, capacity: int = CAPACITY) -> None:
        self.function = function
        self.buffer = torch.empty(capacity)

    def __call__(self, *args, **kwargs) -> torch.Tensor:
        result = self.function(*args, **kwargs)
        output = self.buffer[: result.numel()].view(result.shape)
        return output.copy_(result)


def encoder_with_graph_owned_cache(fixed: bool):
    """The stand-in encoder whose position maps come out of the faked replay: its cache keeps
    views of the shared buffer, as sam2 0.4.1's cache keeps graph memory under CUDA graphs."""
    encoder, eager = encoder_and_eager_twin(CachedSinePosition(CHANNELS, fixed=fixed), "cpu")
    encoder.position.encode = ReusedBufferRunner(encoder.position.encode)
    return encoder, eager


@pytest.mark.catches(
    "suites/sam2_460_cudagraph/oracles.py::check_against_eager",
    "suites/sam2_460_cudagraph/oracles.py::compare_output",
)
@torch.no_grad()
def test_fault_cache_of_reused_buffer_is_flagged():
    encoder, eager = encoder_with_graph_owned_cache(fixed=False)
    with pytest.raises(BugObserved, match="differs from eager"):
        check_against_eager(encoder, eager, frames("cpu"))


@pytest.mark.catches(
    "suites/sam2_460_cudagraph/oracles.py::check_kept_outputs_against_eager",
    "suites/sam2_460_cudagraph/oracles.py::compare_output",
)
@torch.no_grad()
def test_fault_kept_outputs_of_reused_buffer_are_flagged():
    encoder, eager = encoder_and_eager_twin(CachedSinePosition(CHANNELS, fixed=False), "cpu")
    with pytest.raises(BugObserved, match="differs from eager"):
        check_kept_outputs_against_eager(ReusedBufferRunner(encoder), eager, frames("cpu"))


@torch.no_grad()
@pytest.mark.parametrize("oracle", [check_against_eager, check_kept_outputs_against_eager])
def test_correct_runs_pass(oracle):
    encoder, eager = encoder_and_eager_twin(CachedSinePosition(CHANNELS, fixed=False), "cpu")
    oracle(encoder, eager, frames("cpu"))


def raising(message: str):
    def run(frame: torch.Tensor) -> torch.Tensor:
        raise RuntimeError(message)

    return run


@pytest.mark.catches(
    "suites/sam2_460_cudagraph/oracles.py::check_against_eager",
    "suites/sam2_460_cudagraph/oracles.py::compare_output",
)
def test_fault_overwrite_error_is_flagged():
    with pytest.raises(BugObserved, match=OVERWRITE_TEXT):
        check_against_eager(raising(f"Error: accessing tensor output of CUDAGraphs that has been {OVERWRITE_TEXT}."), torch.clone, frames("cpu"))


def test_other_runtime_errors_stay_errors():
    with pytest.raises(RuntimeError, match="unrelated") as caught:
        check_against_eager(raising("unrelated failure"), torch.clone, frames("cpu"))
    assert not isinstance(caught.value, BugObserved)


@pytest.mark.catches("suites/sam2_460_cudagraph/oracles.py::check_position_cache_follows_device")
def test_fault_cache_on_wrong_device_is_flagged():
    with pytest.raises(BugObserved, match="is on cpu, expected meta"):
        check_position_cache_follows_device(CachedSinePosition(CHANNELS, fixed=False), CHANNELS, size=8)


def test_cache_that_follows_device_passes():
    check_position_cache_follows_device(CachedSinePosition(CHANNELS, fixed=True), CHANNELS, size=8)


class MetaHostile(torch.nn.Module):
    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return features * features.sum().item()


def test_meta_limits_are_inconclusive():
    with pytest.raises(Inconclusive):
        check_position_cache_follows_device(MetaHostile(), CHANNELS, size=8)
