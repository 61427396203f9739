"""pytest plugin for the GPU-runner rehearsal: torch's real CUDA device guard stays in force.

On a machine with a GPU, `torch._C._ensureCUDADeviceGuardSet()` (which the simulation, FakeTensor
and Dynamo call) installs nothing: C++ entry points that open a device guard for a tensor that
reports `cuda:1` reach the real CUDA runtime (`cudaSetDevice(1)`: "invalid device ordinal" on a
one-GPU runner and in every xdist worker, pinned to one GPU; the real second device on a two-GPU
one). Loaded with `-p tests.helpers.real_cuda_guard`, it makes that call a no-op here too, so that any such
entry point fails on this CPU machine (CUDA's driver error) instead of meeting a no-op guard.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    import torch

    torch._C._ensureCUDADeviceGuardSet = lambda: None  # as on a machine where the count is not 0
