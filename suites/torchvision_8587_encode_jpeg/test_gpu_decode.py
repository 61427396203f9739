"""decode_jpeg(device=...) checked the same way: single and batched (list) input (8587's sibling:
batched GPU decode had the same event-order risk). Bytes come from the CPU encoder, so only the
decoder on `device` is under test; on CPU the body is the control. Decoding right after the caller
freed memory is a different bug: suites/torchvision_9606_decode_freed_memory/."""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api

from .images import cpu_frames
from .marks import SUITE_MARKS
from .oracle import QUALITY, Where, check_decoded

decode_jpeg, encode_jpeg = library_api("torchvision.io", "decode_jpeg", "encode_jpeg", first_release="0.8.0")

pytestmark = SUITE_MARKS

BATCH = 4


@pytest.mark.parametrize("form", ["single", "batched"])
def test_decode_matches_source(device, form, race_budget, frame_rng, attach_image):
    device = torch.device(device)
    for iteration in race_budget.iterations():
        sources = cpu_frames(frame_rng, 1 if form == "single" else BATCH, device)
        encoded = [encode_jpeg(source, quality=QUALITY) for source in sources]
        decoded = decode_jpeg(encoded[0], device=device) if form == "single" else decode_jpeg(encoded, device=device)
        decoded = [decoded] if form == "single" else decoded
        for index, (source, image) in enumerate(zip(sources, decoded)):
            where = Where(str(device), source.shape[1], source.shape[2], iteration, thread=index)
            check_decoded(source, image, where, f"decode_jpeg(device={str(device)!r}, {form})", attach_image)
