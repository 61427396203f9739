"""Fixtures shared by suites in different folders (a folder's conftest.py is seen by that folder
only): `frame_rng`, for the JPEG codec kit's frames (torchvision 8587 and 9606); `cpu_pin_kernel`,
for the pinning proxies (torchvision-8855, torch-48419)."""

from __future__ import annotations

import pytest
import torch

from simcuda import simulated_pinning


@pytest.fixture
def frame_rng(seeded_rng: int) -> torch.Generator:
    """A CPU generator for frame sizes and colours, seeded from the test's seed (replayable)."""
    return torch.Generator().manual_seed(seeded_rng)


@pytest.fixture
def cpu_pin_kernel():
    """CPU kernels for ATen's `_pin_memory` and `is_pinned`, for this one test only: the simulated
    device's (simcuda/pinning.py), where only what `_pin_memory` made reads as pinned, so a clone
    in place of a pin shows."""
    with simulated_pinning():
        yield
