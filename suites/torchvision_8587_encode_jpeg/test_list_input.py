"""encode_jpeg([...]): the batched path (one nvJPEG call for many frames on a GPU), frames of
different sizes, contents and memory layouts in one list."""

from __future__ import annotations

import torch

from fixtures.known_bugs.library_api import library_api

from .images import LAYOUTS, SIZE_RANGE, image_maker, random_size, with_layout
from .marks import SUITE_MARKS
from .oracle import QUALITY, Where, check_jpeg, nvjpeg_failure_is_observed

encode_jpeg = library_api("torchvision.io", "encode_jpeg", first_release="0.8.0")

pytestmark = SUITE_MARKS

BATCH = 4


def test_list_encode_decodes_each_frame_to_its_source(device, race_budget, frame_rng, attach_image):
    device = torch.device(device)
    for iteration in race_budget.iterations():
        sizes = [random_size(frame_rng, *SIZE_RANGE[device.type]) for _ in range(BATCH)]
        sources = [
            with_layout(image_maker(index)(height, width, frame_rng, device), LAYOUTS[index % len(LAYOUTS)])
            for index, (height, width) in enumerate(sizes)
        ]
        with nvjpeg_failure_is_observed(Where(str(device), *sizes[0], iteration)):
            encoded = encode_jpeg(sources, quality=QUALITY)
        assert len(encoded) == BATCH, f"encode_jpeg returned {len(encoded)} results for {BATCH} frames"
        for index, (source, data) in enumerate(zip(sources, encoded)):
            height, width = sizes[index]
            # "thread" is the frame's position in the list here: one thread encodes them all.
            check_jpeg(source, data, Where(str(device), height, width, iteration, thread=index), attach_image)
