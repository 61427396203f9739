"""Fixtures of the torchvision-8855 suite."""

from __future__ import annotations

import pytest

from .cpu_pinning import cpu_pinning


@pytest.fixture
def cpu_pin_kernel():
    """CPU proxy for pinning, registered for this one test only (see cpu_pinning.py)."""
    with cpu_pinning():
        yield
