"""Control: CUDA graphs are active in the installed torch, and PyTorch's documented overwrite
behaviour and its remedies hold (torch.compiler docs, "CUDAGraph Trees"). On a GPU, and on the
simulated device (simulable), where the same checks prove that it plays the tree's rules.

Without this control a torch that never used CUDA graphs would make the sam2-460 reproduction
pass vacuously. A torch that hands back stale data silently, instead of raising, is a regression.
"""

from __future__ import annotations

import pytest
import torch

from suites.sam2_460_cudagraph.oracles import is_overwrite_error

CPU_REASON = "CUDA graphs never apply to CPU tensors: torch.compile runs CPU code without them"
pytestmark = pytest.mark.simulable
# Different inputs, so that stale data (the second result read as the first) is told apart.
SIZE = 8
# An intact read-back differs from a fresh `x @ x` by float rounding only; stale data (another
# input's square) by ~1 per element (bench/oracle_calibration.py).
CLOSE_ATOL, CLOSE_RTOL = 1e-3, 1e-3


def square(x: torch.Tensor) -> torch.Tensor:
    return x @ x


@pytest.fixture
def compiled_square(device: str):
    if device == "cpu":
        pytest.skip(CPU_REASON)
    torch._dynamo.reset()
    yield torch.compile(square, mode="reduce-overhead")
    torch._dynamo.reset()


def inputs(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.rand(SIZE, SIZE, device=device), torch.rand(SIZE, SIZE, device=device)


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a, b, rtol=CLOSE_RTOL, atol=CLOSE_ATOL)


def test_second_run_overwrites_first_output(device, compiled_square):
    first, second = inputs(device)
    y1 = compiled_square(first)
    compiled_square(second)
    try:
        read_back = y1.clone()
    except RuntimeError as error:
        assert is_overwrite_error(error), f"reading the first output raised another error: {error}"
        return
    if close(read_back, square(first)):
        pytest.fail(
            "no overwrite error and the first output is intact: CUDA graphs are not active "
            "(mode='reduce-overhead' fell back?), so the sam2-460 reproduction would prove nothing"
        )
    pytest.fail("REGRESSION in torch: the first output was overwritten silently (stale data, no error)")


def test_clone_keeps_first_output(device, compiled_square):
    first, second = inputs(device)
    y1 = compiled_square(first).clone()
    y2 = compiled_square(second)
    assert close(y1, square(first)), "a clone taken before the next run changed"
    assert close(y2, square(second))


def test_mark_step_begin_then_read_at_once(device, compiled_square):
    for x in (*inputs(device), *inputs(device)):
        torch.compiler.cudagraph_mark_step_begin()
        assert close(compiled_square(x), square(x)), "an output read before the next run is wrong"
