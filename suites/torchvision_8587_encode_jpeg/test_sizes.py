"""Sizes drawn by Hypothesis (odd widths, non-square), plus the fixed sizes of the upstream
reports: 2048x2048 and 4096x4096 ("generates noise when processing 4k image")."""

from __future__ import annotations

import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from fixtures.known_bugs.library_api import library_api

from .images import IMAGE_MAKERS, LAYOUTS, with_layout
from .marks import SUITE_MARKS
from .oracle import QUALITY, Where, check_jpeg

encode_jpeg = library_api("torchvision.io", "encode_jpeg", first_release="0.8.0")

pytestmark = SUITE_MARKS

# Drawn sides stay at most 1024 (cheap on CPU); the large sizes are the two fixed examples.
sides = st.integers(64, 1024)
odd_widths = st.integers(32, 511).map(lambda half: 2 * half + 1)


@given(
    height=sides,
    width=st.one_of(odd_widths, sides),
    content=st.sampled_from(sorted(IMAGE_MAKERS)),
    layout=st.sampled_from(LAYOUTS),
)
@example(height=2048, width=2048, content="gradient", layout="contiguous")
@example(height=4096, width=4096, content="gradient", layout="contiguous")
# No deadline: the 4096x4096 example takes 5-25 s on a CPU depending on load, so a deadline here
# timed the machine and failed runs as errors; pytest-timeout still bounds a real hang.
@settings(deadline=None)
def test_encode_decodes_to_source_at_any_size(device, frame_rng, attach_image, height, width, content, layout):
    device = torch.device(device)
    # The 4096x4096 report is a GPU symptom; on the CPU (a control of the oracle) the 2048x2048
    # example covers large frames, and the 4K one would be over a second of the whole CPU run.
    assume(device.type != "cpu" or height * width <= 2048 * 2048)
    source = with_layout(IMAGE_MAKERS[content](height, width, frame_rng, device), layout)
    encoded = encode_jpeg(source, quality=QUALITY)
    check_jpeg(source, encoded, Where(str(device), height, width, iteration=0), attach_image)
