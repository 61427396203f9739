"""The marks every module of the JPEG codec suites carries (8587 here; 9060 and 9606 reuse them)."""

import pytest

from .oracle import TORCHVISION_IO_DEPRECATION


def codec_marks(bug_id: str) -> list[pytest.MarkDecorator]:
    return [
        pytest.mark.known_bug(bug_id),
        # The API under test is still these functions, so the deprecation notice is not a finding.
        pytest.mark.filterwarnings(f"ignore:{TORCHVISION_IO_DEPRECATION}:DeprecationWarning"),
    ]


SUITE_MARKS = codec_marks("torchvision-8587")
