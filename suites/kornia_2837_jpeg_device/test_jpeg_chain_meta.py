"""kornia-2837, CPU proxy: the codec's chain on meta inputs must return meta tensors.

A tensor made without device= lands on the CPU and meets the meta input: torch reports
"Tensor on device cpu is not on the expected device meta!" (tried at the buggy commit: the
folder's README). The whole codec cannot run on meta (it calls .item()), so only its pieces are here.
"""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.outcomes import Inconclusive, observe
from fixtures.proxies.meta_proxy import ERROR, FINDING, INCONCLUSIVE, classify_call
from suites.kornia_2837_jpeg_device.chain import CHAIN_PIECES


@pytest.mark.known_bug("kornia-2837", evidence="proxy")
@pytest.mark.parametrize("piece", sorted(CHAIN_PIECES))
def test_chain_piece_stays_on_meta(piece: str) -> None:
    meta = torch.device("meta")
    result = classify_call(lambda: CHAIN_PIECES[piece](meta), meta)
    observe(result.kind == FINDING, f"{piece} on meta: {result.detail}")
    if result.kind == INCONCLUSIVE:
        raise Inconclusive(f"{piece} cannot run on meta: {result.detail}")
    assert result.kind != ERROR, f"harness: {piece} failed on meta for another reason: {result.detail}"
