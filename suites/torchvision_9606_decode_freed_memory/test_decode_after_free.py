"""torchvision-9606: CUDA decode_jpeg allocates its output on the caller's stream and decodes on a
pool stream that does not wait for it, so a block the caller just freed (still read by kernels
queued on its stream) is overwritten. Upstream PR 9606's reproducer, closed without merging.
The frames, the load and the oracle are the torchvision-8587 suite's (one JPEG codec kit)."""

from __future__ import annotations

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from suites.torchvision_8587_encode_jpeg.device_load import queue_long_work, synchronize
from suites.torchvision_8587_encode_jpeg.images import cpu_frames
from suites.torchvision_8587_encode_jpeg.marks import codec_marks
from suites.torchvision_8587_encode_jpeg.oracle import QUALITY, Where, check_decoded, check_untouched

decode_jpeg, encode_jpeg = library_api("torchvision.io", "decode_jpeg", "encode_jpeg", first_release="0.8.0")

pytestmark = codec_marks("torchvision-9606")

VICTIMS = 4  # tensors freed right before each decode, one of them likely handed to the decoder


# The decoder writes into freed memory; on a GPU that can fault the context.
@pytest.mark.isolated_on_gpu
def test_decode_after_caller_freed_memory(device, race_budget, frame_rng, attach_image):
    """Reductions queued on the caller's stream still read freed tensors when decode_jpeg
    allocates; a wrong reduction means the decoder wrote into them."""
    device = torch.device(device)
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
