"""decode_jpeg(device=...) checked the same way: single and batched (list) input, and decoding
right after the caller freed memory its stream is still reading (upstream PR 9606: the decoder
was handed those freed blocks and overwrote them). Bytes come from the CPU encoder, so only the
decoder on `device` is under test; on CPU the body is the control."""

from __future__ import annotations

import pytest
import torch
from torchvision.io import decode_jpeg, encode_jpeg

from .device_load import queue_long_work, synchronize
from .images import IMAGE_MAKERS, SIZE_RANGE, random_size
from .marks import SUITE_MARKS
from .oracle import QUALITY, Where, check_decoded, check_untouched

pytestmark = SUITE_MARKS

BATCH = 4
VICTIMS = 4  # tensors freed right before each decode, one of them likely handed to the decoder


def cpu_frames(rng: torch.Generator, count: int, decoder: torch.device) -> list[torch.Tensor]:
    """Frames built on CPU, sized for the device that will decode them."""
    makers = list(IMAGE_MAKERS.values())
    sizes = [random_size(rng, *SIZE_RANGE[decoder.type]) for _ in range(count)]
    return [makers[index % len(makers)](*size, rng, torch.device("cpu")) for index, size in enumerate(sizes)]


@pytest.mark.parametrize("form", ["single", "batched"])
def test_decode_matches_source(device, form, race_budget, frame_rng, attach_image, record_property):
    device = torch.device(device)
    iterations = 0
    try:
        for iteration in race_budget.iterations():
            sources = cpu_frames(frame_rng, 1 if form == "single" else BATCH, device)
            encoded = [encode_jpeg(source, quality=QUALITY) for source in sources]
            decoded = decode_jpeg(encoded[0], device=device) if form == "single" else decode_jpeg(encoded, device=device)
            decoded = [decoded] if form == "single" else decoded
            for index, (source, image) in enumerate(zip(sources, decoded)):
                where = Where(str(device), source.shape[1], source.shape[2], iteration, thread=index)
                check_decoded(source, image, where, f"decode_jpeg(device={str(device)!r}, {form})", attach_image)
            iterations += 1
    finally:
        record_property("iterations", iterations)


# Upstream PR 9606: the decoder wrote into freed memory; on a GPU that can fault the context.
@pytest.mark.isolated_on_gpu
def test_decode_after_caller_freed_memory(device, race_budget, frame_rng, attach_image, record_property):
    """PR 9606's reproducer: reductions queued on the caller's stream still read freed tensors
    when decode_jpeg allocates; a wrong reduction means the decoder wrote into them."""
    device = torch.device(device)
    iterations = 0
    try:
        for iteration in race_budget.iterations():
            (source,) = cpu_frames(frame_rng, 1, device)
            encoded = encode_jpeg(source, quality=QUALITY)
            # Victims the size of the decoded frame, so the allocator can hand one to the decoder.
            victims = [torch.full(source.shape, fill, dtype=torch.uint8, device=device) for fill in range(1, VICTIMS + 1)]
            synchronize(device)  # the victims hold their values before the race starts
            queue_long_work(device)
            sums = [victim.sum() for victim in victims]  # queued behind the long work
            del victims  # freed on the caller's stream while the sums are still queued
            decoded = decode_jpeg(encoded, device=device)
            synchronize(device)
            where = Where(str(device), source.shape[1], source.shape[2], iteration)
            check_untouched([int(total) for total in sums], source.numel(), where)
            check_decoded(source, decoded, where, f"decode_jpeg(device={str(device)!r}) after frees", attach_image)
            iterations += 1
    finally:
        record_property("iterations", iterations)
