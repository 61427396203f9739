"""What the comparison and the verdict depend on inside torch, read or set here so that the
oracles stay pure: the fp32 precision in force (TF32 or full fp32), whether inductor really ran
the graphs as CUDA graphs, and on which GPU the position cache is warmed.

Read from torch 2.15's sources: inductor bumps counters["inductor"]["cudagraph_skips"] whenever
it falls back from CUDA graphs (torch/_inductor/cudagraph_utils.py, e.g. "skipping cudagraphs
due to multiple devices"); a recorded graph is a CUDAGraphNode under the thread's
CUDAGraphTreeManager.roots (torch/_inductor/cudagraph_trees.py). Argued, not run on a GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import ContextManager

import torch

from fixtures.devices import cuda_index


def tf32_flags() -> tuple[bool, bool]:
    """(matmul, cuDNN) TF32 as in force now. The legacy flags, as fixtures/torch_state.py
    restores them: torch 2.15 refuses to read them once the two APIs have been mixed."""
    return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32


@contextmanager
def full_fp32() -> Iterator[None]:
    """Full fp32 for eager and compiled alike (cuBLAS, cuDNN and inductor's Triton templates,
    which read these flags when they compile), restored afterwards."""
    saved = tf32_flags()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def cudagraph_skips() -> int:
    """How often inductor has fallen back from CUDA graphs in this process."""
    from torch._dynamo.utils import counters

    return counters["inductor"]["cudagraph_skips"]


def recorded_cuda_graphs(device_index: int) -> int:
    """CUDA graphs recorded on this thread's tree for the GPU (0 where none was made)."""
    from torch._inductor.cudagraph_trees import get_manager

    manager = get_manager(device_index, create_if_none_exists=False)
    if manager is None or manager.roots is None:
        return 0
    return sum(len(nodes) for nodes in manager.roots.values())


def warm_on(device: str) -> ContextManager[object]:
    """Where a position encoding built inside fills its cache: sam2 1.1.0 (and the stand-in)
    warm on "cuda", the current device; for cuda:1 that must be cuda:1, or inductor sees inputs
    on two devices and skips CUDA graphs, and the test would pass without the bug's conditions."""
    index = cuda_index(device)
    return torch.cuda.device(index) if index is not None else nullcontext()
