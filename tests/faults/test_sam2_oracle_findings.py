"""What sam2-460's oracles report and tolerate: a finding names the frame, its shape and the
largest difference; float32 kernel noise within ATOL/RTOL passes; the position-cache proxy
says why it cannot decide, and a failure of another kind stays the harness's own error."""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.outcomes import BugObserved, Inconclusive
from suites.sam2_460_cudagraph.oracles import (
    ATOL,
    RTOL,
    check_against_eager,
    check_kept_outputs_against_eager,
    check_position_cache_follows_device,
    torch_overwrite_text,
)

FRAMES = [torch.ones(1, 3, 4, 4), torch.ones(1, 3, 4, 6)]


def off_on_the_second_frame(frame: torch.Tensor) -> torch.Tensor:
    return frame + 0.5 if frame.shape[-1] == 6 else frame.clone()


@pytest.mark.parametrize("oracle", [check_against_eager, check_kept_outputs_against_eager])
def test_finding_names_frame_shape_and_largest_difference(oracle) -> None:
    with pytest.raises(BugObserved) as raised:
        oracle(off_on_the_second_frame, torch.clone, FRAMES)
    assert str(raised.value) == "frame 1 (1, 3, 4, 6): compiled output differs from eager (max abs diff 0.5)"


@pytest.mark.parametrize("oracle", [check_against_eager, check_kept_outputs_against_eager])
@pytest.mark.parametrize(
    ("frame", "noise"),
    [(torch.zeros(1, 3, 4, 4), ATOL / 2), (torch.full((1, 3, 4, 4), 100.0), 100.0 * RTOL / 2)],
    ids=["absolute, near zero", "relative, large values"],
)
def test_float32_kernel_noise_within_tolerance_passes(oracle, frame: torch.Tensor, noise: float) -> None:
    oracle(lambda f: f + noise, torch.clone, [frame])


def test_overwrite_finding_names_the_frame() -> None:
    def overwritten(frame: torch.Tensor) -> torch.Tensor:
        raise RuntimeError(torch_overwrite_text() + "(trace)")

    with pytest.raises(BugObserved) as raised:
        check_against_eager(overwritten, torch.clone, FRAMES)
    assert str(raised.value) == f"frame 0 (1, 3, 4, 4): {torch_overwrite_text()}(trace)"


class BrokenOnMeta(torch.nn.Module):
    """Fails on meta with an error that is neither a device mismatch nor a meta limit."""

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if features.is_meta:
            raise ValueError("unsupported layout")
        return features


def test_position_proxy_says_why_it_cannot_decide() -> None:
    def reads_a_value(features: torch.Tensor) -> torch.Tensor:
        return features * features.sum().item()

    with pytest.raises(Inconclusive, match="^the position encoding cannot run on meta: RuntimeError: "):
        check_position_cache_follows_device(reads_a_value, channels=4, size=8)


def test_position_proxy_failing_for_another_reason_is_a_harness_error() -> None:
    with pytest.raises(AssertionError, match="^harness: the position encoding failed on meta for another reason") as raised:
        check_position_cache_follows_device(BrokenOnMeta(), channels=4, size=8)
    assert not isinstance(raised.value, BugObserved)
