"""sam2-460's oracles flag the faults they exist for, and pass correct runs (CPU, no compile)."""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.outcomes import BugObserved, Inconclusive
from suites.sam2_460_cudagraph.oracles import (
    check_against_eager,
    check_kept_outputs_against_eager,
    check_position_cache_follows_device,
    is_overwrite_error,
    torch_overwrite_text,
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
    """The error exactly as the installed torch words it (its own formatter, a stack trace in it)."""
    from torch._inductor.cudagraph_trees import CUDAGraphTreeManager

    message = CUDAGraphTreeManager.format_dealloc_msg('File "encoder.py", line 12, in forward')
    with pytest.raises(BugObserved, match="frame 0") as finding:
        check_against_eager(raising(message), torch.clone, frames("cpu"))
    assert message in str(finding.value)


def test_the_overwrite_text_is_read_from_torch():
    """torch still builds the message with a fixed start: the text the oracle and the GPU control
    look for. This fails when the formatter is gone or no longer puts fixed text first."""
    text = torch_overwrite_text()
    assert "CUDAGraphs" in text and len(text) > 40, f"torch's overwrite message start looks wrong: {text!r}"


def test_a_rewording_in_torch_is_followed_not_matched_against_a_copy(monkeypatch):
    from torch._inductor.cudagraph_trees import CUDAGraphTreeManager

    old = RuntimeError(CUDAGraphTreeManager.format_dealloc_msg(None))
    reworded = staticmethod(lambda stack_trace: f"CUDAGraph output reused by a later replay (trace: {stack_trace})")
    monkeypatch.setattr(CUDAGraphTreeManager, "format_dealloc_msg", reworded)
    torch_overwrite_text.cache_clear()
    try:
        assert is_overwrite_error(RuntimeError("CUDAGraph output reused by a later replay (trace: x)"))
        assert not is_overwrite_error(old)
    finally:
        torch_overwrite_text.cache_clear()


def test_other_runtime_errors_stay_errors():
    with pytest.raises(RuntimeError, match="unrelated") as caught:
        check_against_eager(raising("unrelated failure"), torch.clone, frames("cpu"))
    assert not isinstance(caught.value, BugObserved)


@pytest.mark.catches(
    "suites/sam2_460_cudagraph/oracles.py::check_position_cache_follows_device",
    "fixtures/proxies/meta_proxy.py::classify_result",
)
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
