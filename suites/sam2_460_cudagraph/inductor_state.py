"""What the comparison and the verdict depend on inside torch, read or set here so that the
oracles stay pure: whether inductor really ran the graphs as CUDA graphs, and on which GPU the
position cache is warmed (the fp32 precision in force: fixtures/determinism/precision.py).

Read from torch 2.15's sources: inductor bumps counters["inductor"]["cudagraph_skips"] whenever
it falls back from CUDA graphs (torch/_inductor/cudagraph_utils.py, e.g. "skipping cudagraphs
due to multiple devices"); a recorded graph is a CUDAGraphNode under the thread's
CUDAGraphTreeManager.roots (torch/_inductor/cudagraph_trees.py). Argued, not run on a GPU.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import torch

from fixtures.devices.spec import cuda_index
from simcuda import current_simulation


def cudagraph_skips() -> int:
    """How often inductor has fallen back from CUDA graphs in this process."""
    from torch._dynamo.utils import counters

    return counters["inductor"]["cudagraph_skips"]


def recorded_cuda_graphs(device_index: int) -> int:
    """CUDA graphs recorded on this thread's tree for the GPU (0 where none was made); on the
    simulated device, on its simulated tree (simcuda/graphs.py)."""
    simulation = current_simulation()
    if simulation is not None:
        return simulation.recorded_cuda_graphs(device_index)
    from torch._inductor.cudagraph_trees import get_manager

    manager = get_manager(device_index, create_if_none_exists=False)
    if manager is None or manager.roots is None:
        return 0
    return sum(len(nodes) for nodes in manager.roots.values())


def warm_on(device: str) -> AbstractContextManager[object]:
    """Where a position encoding built inside fills its cache: sam2 1.1.0 (and the stand-in)
    warm on "cuda", the current device; for cuda:1 that must be cuda:1, or inductor sees inputs
    on two devices and skips CUDA graphs, and the test would pass without the bug's conditions."""
    index = cuda_index(device)
    return torch.cuda.device(index) if index is not None else nullcontext()
