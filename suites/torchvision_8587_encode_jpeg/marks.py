"""Marks every test module of this suite carries."""

import pytest

from .oracle import TORCHVISION_IO_DEPRECATION

SUITE_MARKS = [
    pytest.mark.known_bug("torchvision-8587"),
    # The API under test is still these functions, so the deprecation notice is not a finding.
    pytest.mark.filterwarnings(f"ignore:{TORCHVISION_IO_DEPRECATION}:DeprecationWarning"),
]
