"""The suite's oracles: compiled outputs against eager, and the position cache's device.

Pure functions over callables and tensors, so tests/ can hand them faked runners.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import torch

from fixtures.known_bugs.outcomes import BugObserved, Inconclusive, observe
from fixtures.proxies.meta_proxy import ERROR, FINDING, INCONCLUSIVE, classify_call

# Stands in for the stack trace in torch's message, to cut off the part every such error shares.
_TRACE_MARK = "\x00stack trace\x00"
# float32 inductor kernels (fused sin/cos, reassociated sums) against eager, both in full fp32.
ATOL, RTOL = 1e-4, 1e-4
# With TF32 in force somewhere (10-bit mantissa, relative error ~5e-4 per product) eager cuDNN and
# inductor's kernels round differently: a CPU emulation of TF32 here reached 7e-4 on 140 frames.
# 3x that still sits far below what an overwritten output differs by (values of order 1).
TF32_ATOL, TF32_RTOL = 2e-3, 2e-3
Tolerance = tuple[float, float]

Frames = Sequence[torch.Tensor]
Runner = Callable[[torch.Tensor], torch.Tensor]


@cache
def torch_overwrite_text() -> str:
    """The start of the error the installed torch raises on reading CUDA-graph memory that a later
    replay reused ("Error: accessing tensor output of CUDAGraphs that has been overwritten by a
    subsequent run. Stack trace: "), built by torch's own formatter, so a change in torch's
    wording is followed rather than matched against a copy of ours. Imported on first use:
    torch._inductor is slow to import."""
    from torch._inductor.cudagraph_trees import CUDAGraphTreeManager

    message = CUDAGraphTreeManager.format_dealloc_msg(_TRACE_MARK)
    prefix = message.partition(_TRACE_MARK)[0]
    if not prefix or prefix == message:
        raise RuntimeError(f"harness: torch's overwrite message no longer starts with fixed text: {message!r}")
    return prefix


def is_overwrite_error(error: BaseException) -> bool:
    return isinstance(error, RuntimeError) and torch_overwrite_text() in str(error)


def comparison_tolerance(tf32_matmul: bool, tf32_cudnn: bool) -> Tolerance:
    """(atol, rtol) for compiled-vs-eager under the fp32 precision in force."""
    return (TF32_ATOL, TF32_RTOL) if tf32_matmul or tf32_cudnn else (ATOL, RTOL)


def from_the_tree(sighting: BugObserved) -> bool:
    """Whether a sighting is torch's own overwrite error, which only the CUDA-graph tree raises:
    proof by itself that graphs ran, even where it fired before any graph was recorded (sam2 0.4.1
    at the second frame, during the new generation's first run). A mismatch of values is not."""
    return sighting.__cause__ is not None and is_overwrite_error(sighting.__cause__)


def cudagraph_use_problem(skips: int, recorded_graphs: int) -> str | None:
    """Why a run that saw nothing wrong cannot count as direct evidence of sam2-460 (the bug
    lives in CUDA-graph memory), or None when inductor did run CUDA graphs."""
    if skips:
        return f"inductor skipped CUDA graphs {skips} time(s) (see its 'skipping cudagraphs' log), so the bug could not show"
    if not recorded_graphs:
        return "no CUDA graph was recorded, so the bug could not show"
    return None


def check_against_eager(run: Runner, eager: Runner, frames: Frames, tolerance: Tolerance = (ATOL, RTOL)) -> None:
    """Run every frame and read its output at once (before the next run, as CUDA graphs allow),
    comparing with eager. An overwrite error or a wrong output can then only come from memory
    the runner kept between runs, such as a cache of graph outputs: BugObserved."""
    for index, frame in enumerate(frames):
        compare_output(index, frame, lambda frame=frame: run(frame), eager(frame), tolerance)


def check_kept_outputs_against_eager(run: Runner, eager: Runner, frames: Frames, tolerance: Tolerance = (ATOL, RTOL)) -> None:
    """Run every frame, keep the outputs, then read them all: what a caller that clones outputs,
    or runs without CUDA graphs, may do. An overwrite error or a wrong output: BugObserved."""
    outputs = [run(frame) for frame in frames]
    for index, (frame, output) in enumerate(zip(frames, outputs)):
        compare_output(index, frame, lambda output=output: output, eager(frame), tolerance)


def compare_output(
    index: int, frame: torch.Tensor, read: Callable[[], torch.Tensor], expected: torch.Tensor, tolerance: Tolerance
) -> None:
    """Read one output (running it, where `read` runs) and compare it with eager's."""
    atol, rtol = tolerance
    try:
        output = read()
        matches = torch.allclose(output, expected, atol=atol, rtol=rtol)
    except RuntimeError as error:
        if is_overwrite_error(error):
            raise BugObserved(f"frame {index} {tuple(frame.shape)}: {error}") from error
        raise
    observe(
        not matches,
        f"frame {index} {tuple(frame.shape)}: compiled output differs from eager "
        f"(max abs diff {(output - expected).abs().max().item():.3g})",
    )


def check_position_cache_follows_device(position: torch.nn.Module, channels: int, size: int) -> None:
    """Proxy of the root cause on CPU: fill the cache with a CPU call, then call with a meta
    input. A cache that hands back what it stored (sam2 0.4.1) answers on the CPU, so a graph
    output it stored would be handed back the same way: BugObserved."""
    position(torch.zeros(1, channels, size, size))
    meta = torch.empty(1, channels, size, size, device="meta")
    result = classify_call(lambda: position(meta), "meta")
    observe(result.kind == FINDING, f"a meta input after a CPU call: {result.detail} (the cache ignores the caller's device)")
    if result.kind == INCONCLUSIVE:
        raise Inconclusive(f"the position encoding cannot run on meta: {result.detail}")
    assert result.kind != ERROR, f"harness: the position encoding failed on meta for another reason: {result.detail}"
