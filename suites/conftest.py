"""Fixtures shared by suites in different folders (a folder's conftest.py is seen by that folder
only): `frame_rng`, for the JPEG codec kit's frames (torchvision 8587 and 9606)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def frame_rng(seeded_rng: int) -> torch.Generator:
    """A CPU generator for frame sizes and colours, seeded from the test's seed (replayable)."""
    return torch.Generator().manual_seed(seeded_rng)
