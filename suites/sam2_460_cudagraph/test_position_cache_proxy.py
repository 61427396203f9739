"""CPU proxy of sam2-460's root cause: the position cache hands back what it stored, whatever
device the caller is on (0.4.1), instead of moving it to the caller's device (1.1.0, PR 486).
Under CUDA graphs the stored tensor is graph memory that a later run overwrites; on CPU the
same flaw shows as a CPU tensor answered to a `meta` input. Labelled a proxy in every verdict."""

from __future__ import annotations

import pytest

from suites.sam2_460_cudagraph.oracles import check_position_cache_follows_device
from suites.sam2_460_cudagraph.position_encodings import CHANNELS, SAM2_INSTALL_HINT, sam2_position_encoding_class

SIZE = 8


@pytest.mark.known_bug("sam2-460", evidence="proxy")
def test_position_cache_answers_on_callers_device():
    sam2_class = sam2_position_encoding_class()
    if sam2_class is None:
        pytest.skip(f"sam2 not importable (needs sam2 with hydra-core and iopath): {SAM2_INSTALL_HINT}")
    check_position_cache_follows_device(sam2_class(CHANNELS), CHANNELS, SIZE)
