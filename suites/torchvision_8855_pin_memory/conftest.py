"""Fixtures of the torchvision-8855 suite."""

from __future__ import annotations

import pytest

from simcuda.pinning import simulated_pinning


@pytest.fixture
def cpu_pin_kernel():
    """CPU kernels for ATen's `_pin_memory` and `is_pinned`, for this one test only: the simulated
    device's (simcuda/pinning.py), where only what `_pin_memory` made reads as pinned, so a clone
    in place of a pin shows."""
    with simulated_pinning():
        yield
