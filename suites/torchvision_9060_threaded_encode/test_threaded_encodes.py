"""torchvision-9060: encodes from several threads at once while the main thread keeps the device
busy (upstream issue 9060: "Corrupt JPEG data" with threads, reported on 0.22.0, after 8587's fix).
The frames, the load and the oracle are the torchvision-8587 suite's (one JPEG codec kit)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from fixtures.known_bugs.library_api import library_api
from fixtures.known_bugs.outcomes import BugObserved, workers_failure
from fixtures.races.budget import RaceRun
from fixtures.races.phases import PhaseSeconds
from suites.torchvision_8587_encode_jpeg.device_load import keep_busy_until
from suites.torchvision_8587_encode_jpeg.images import image_maker
from suites.torchvision_8587_encode_jpeg.marks import codec_marks
from suites.torchvision_8587_encode_jpeg.oracle import QUALITY, ImageSink, Where, check_jpeg, nvjpeg_failure_is_observed

encode_jpeg = library_api("torchvision.io", "encode_jpeg", first_release="0.8.0")

pytestmark = codec_marks("torchvision-9060")

# Upstream 9060 encoded 4096x4096 frames. On CPU, where this run is a control of the threading
# and the oracle, a 4096x4096 frame costs about a second, so the control uses 512x512.
FRAME_SIDE = {"cuda": 4096, "cpu": 512}


def encode_frames(device: torch.device, thread: int, seed: int, budget: RaceRun, attach: ImageSink, phases: PhaseSeconds) -> None:
    """One worker: encode and check frames until the budget ends (each frame an attempt, counted
    by the run the threads share), timing each attempt's phases."""
    rng = torch.Generator().manual_seed(seed + thread)
    side = FRAME_SIDE[device.type]
    for iteration in budget.iterations():
        # Gradient, then textured: upstream's frames (noise upscaled to 4096x4096) filled a larger
        # bitstream than a smooth gradient does, and the bitstream's buffer is what 9060 corrupts.
        with phases.phase("make"):
            source = image_maker(iteration)(side, side, rng, device)
        where = Where(str(device), side, side, iteration, thread)
        with phases.phase("encode"), nvjpeg_failure_is_observed(where):
            encoded = encode_jpeg(source, quality=QUALITY)
        # Both to the host here, after the encode, so the wait for the main thread's queued
        # convolutions is timed apart from the oracle. The device tensors stay bound until the next
        # frame: when their blocks return to the allocator is part of what the race's next buffer meets.
        with phases.phase("fetch"):
            host_encoded, host_source = encoded.cpu(), source.cpu()
        with phases.phase("check"):
            check_jpeg(host_source, host_encoded, where, attach)


# Upstream 9060: threaded nvJPEG encodes corrupted data; a race there can also crash or hang.
@pytest.mark.isolated_on_gpu
def test_threaded_encodes_under_load(device, threads, race_budget, seeded_rng, attach_image, record_property):
    device = torch.device(device)
    phases = PhaseSeconds()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [
            pool.submit(encode_frames, device, thread, seeded_rng, race_budget, attach_image, phases) for thread in range(threads)
        ]
        keep_busy_until(lambda: all(future.done() for future in futures), device)
    record_property("attempt_seconds", phases.seconds())  # summed over the threads
    errors = [future.exception() for future in futures if future.exception() is not None]
    if sightings := sum(isinstance(error, BugObserved) for error in errors):
        record_property("sightings", sightings)  # each thread stops at its first
    if (failure := workers_failure(errors, threads, "saw a bad frame")) is not None:
        raise failure
