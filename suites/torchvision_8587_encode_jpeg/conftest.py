"""Fixtures of the torchvision-8587 suite."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def frame_rng(seeded_rng: int) -> torch.Generator:
    """A CPU generator for frame sizes and colours, seeded from the test's seed (replayable)."""
    return torch.Generator().manual_seed(seeded_rng)
