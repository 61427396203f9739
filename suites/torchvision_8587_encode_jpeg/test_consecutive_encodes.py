"""Consecutive encodes of frames of random sizes: upstream 8587's "every frame after the first
is noise". Each frame is built on the device and encoded at once, with no synchronize between."""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api

from .images import LAYOUTS, SIZE_RANGE, image_maker, random_size, with_layout
from .marks import SUITE_MARKS
from .oracle import QUALITY, Where, check_jpeg, nvjpeg_failure_is_observed

encode_jpeg = library_api("torchvision.io", "encode_jpeg", first_release="0.8.0")

pytestmark = SUITE_MARKS

@pytest.mark.parametrize("layout", LAYOUTS)
def test_consecutive_encodes_decode_to_their_source(device, layout, race_budget, frame_rng, attach_image):
    device = torch.device(device)
    for iteration in race_budget.iterations():
        height, width = random_size(frame_rng, *SIZE_RANGE[device.type])
        source = with_layout(image_maker(iteration)(height, width, frame_rng, device), layout)
        where = Where(str(device), height, width, iteration)
        with nvjpeg_failure_is_observed(where):
            encoded = encode_jpeg(source, quality=QUALITY)
        check_jpeg(source, encoded, where, attach_image)
