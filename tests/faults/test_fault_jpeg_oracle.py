"""The torchvision-8587 oracle fails on faulty encoder output: noise bytes, truncated bytes,
corrupt bytes, a valid JPEG of noise, the previous frame's bytes, a decoded frame of another size,
a decoder that overwrote freed memory, noise from the threaded stress test's workers (9060), an
nvJPEG failure status from encode_jpeg mid-race, partial frames (bottom rows, a stripe or one
block left from the frame before); and it passes correct encodes (so its thresholds are not too
tight)."""

from __future__ import annotations

import threading

import pytest
import torch
from torchvision.io import decode_jpeg, encode_jpeg

from fixtures.known_bugs.outcomes import BugObserved
from fixtures.races.budget import RaceBudget, RaceRun
from suites.torchvision_8587_encode_jpeg.images import IMAGE_MAKERS, LAYOUTS, gradient_image, with_layout
from suites.torchvision_8587_encode_jpeg.oracle import (
    MAX_BLOCK_ABS_DIFF,
    QUALITY,
    TORCHVISION_IO_DEPRECATION,
    Where,
    block_means,
    check_decoded,
    check_jpeg,
    check_untouched,
    mean_abs_diff_255,
    nvjpeg_failure_is_observed,
)
from suites.torchvision_9060_threaded_encode import test_threaded_encodes as threaded

pytestmark = pytest.mark.filterwarnings(f"ignore:{TORCHVISION_IO_DEPRECATION}:DeprecationWarning")

CPU = torch.device("cpu")
WHERE = Where("cpu", 96, 131, iteration=7, thread=3)


@pytest.fixture
def source() -> torch.Tensor:
    return gradient_image(WHERE.height, WHERE.width, torch.Generator().manual_seed(1), CPU)


@pytest.fixture
def good_bytes(source: torch.Tensor) -> torch.Tensor:
    return encode_jpeg(source, quality=QUALITY)


def corrupt_middle(data: torch.Tensor) -> torch.Tensor:
    """The encoded bytes with a quarter of the entropy-coded data zeroed (headers intact)."""
    corrupt = data.clone()
    start = len(corrupt) // 3
    corrupt[start : start + len(corrupt) // 4] = 0
    return corrupt


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("size", [(64, 64), (96, 131), (257, 1023), (768, 64)], ids=str)
@pytest.mark.parametrize("content", sorted(IMAGE_MAKERS))
def test_correct_encode_passes(content, size, layout):
    image = with_layout(IMAGE_MAKERS[content](*size, torch.Generator().manual_seed(2), CPU), layout)
    assert check_jpeg(image, encode_jpeg(image, quality=QUALITY), Where("cpu", *size, 0)) < MAX_BLOCK_ABS_DIFF


@pytest.mark.catches("suites/torchvision_8587_encode_jpeg/oracle.py::check_jpeg")
def test_fault_noise_bytes(source):
    noise = torch.randint(0, 256, (5000,), dtype=torch.uint8, generator=torch.Generator().manual_seed(3))
    with pytest.raises(BugObserved, match="corrupt JPEG"):
        check_jpeg(source, noise, WHERE)


@pytest.mark.catches("suites/torchvision_8587_encode_jpeg/oracle.py::check_jpeg")
def test_fault_truncated_bytes(source, good_bytes):
    with pytest.raises(BugObserved, match="truncated"):
        check_jpeg(source, good_bytes[: len(good_bytes) // 2], WHERE)


@pytest.mark.catches("suites/torchvision_8587_encode_jpeg/oracle.py::check_jpeg")
def test_fault_corrupt_bytes(source, good_bytes):
    with pytest.raises(BugObserved):
        check_jpeg(source, corrupt_middle(good_bytes), WHERE)


@pytest.mark.catches(
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_jpeg",
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_decoded",
)
def test_fault_valid_jpeg_of_noise_names_where_and_difference(source):
    """The upstream symptom: a well-formed JPEG whose content is noise."""
    noise = torch.randint(0, 256, source.shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(4))
    attached: list[str] = []
    with pytest.raises(BugObserved) as finding:
        check_jpeg(source, encode_jpeg(noise, quality=QUALITY), WHERE, lambda name, image: attached.append(name))
    message = str(finding.value)
    for part in ("96x131", "iteration 7", "thread 3", "mean |difference| x255 ="):
        assert part in message, f"{part!r} missing from {message!r}"
    assert [name.split()[0] for name in attached] == ["source", "decoded", "difference"]


class StaleEncoder:
    """A faked encoder that returns the bytes of the frame before (what a missing wait on the
    caller's stream can produce); the first call encodes correctly."""

    def __init__(self) -> None:
        self.previous: torch.Tensor | None = None

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        current = encode_jpeg(image, quality=QUALITY)
        stale, self.previous = self.previous, current
        return current if stale is None else stale


@pytest.mark.catches(
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_jpeg",
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_decoded",
)
@pytest.mark.parametrize("sizes", [[(96, 131)] * 3, [(96, 131), (64, 200), (150, 77)]], ids=["same-size", "new-sizes"])
def test_fault_previous_frames_bytes(sizes):
    encode, rng = StaleEncoder(), torch.Generator().manual_seed(5)
    with pytest.raises(BugObserved, match="iteration 1"):
        for iteration, (height, width) in enumerate(sizes):
            frame = gradient_image(height, width, rng, CPU)
            check_jpeg(frame, encode(frame), Where("cpu", height, width, iteration))


@pytest.mark.catches("suites/torchvision_8587_encode_jpeg/oracle.py::check_untouched")
def test_fault_decoder_wrote_into_freed_memory():
    numel = 10
    check_untouched([1 * numel, 2 * numel], numel, WHERE)
    with pytest.raises(BugObserved, match="wrote into memory"):
        check_untouched([1 * numel, 2 * numel - 37], numel, WHERE)


@pytest.mark.catches("suites/torchvision_8587_encode_jpeg/oracle.py::check_decoded")
def test_fault_decoded_frame_of_another_size(source, good_bytes):
    other = gradient_image(WHERE.width, WHERE.height, torch.Generator().manual_seed(6), CPU)
    with pytest.raises(BugObserved, match=r"decoded shape \(3, 131, 96\), expected \(3, 96, 131\)"):
        check_decoded(source, other, WHERE, "faked decoder")


def noise_encoder(image: torch.Tensor, quality: int) -> torch.Tensor:
    """A faked encode_jpeg that returns a valid JPEG of noise (upstream 8587's symptom)."""
    noise = torch.randint(0, 256, image.shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(7))
    return encode_jpeg(noise, quality=quality)


@pytest.mark.catches("suites/torchvision_9060_threaded_encode/test_threaded_encodes.py::test_threaded_encodes_under_load")
def test_fault_noise_from_every_worker_thread(monkeypatch):
    """The threaded stress test turns its workers' findings into one BugObserved (not a plain error)."""
    monkeypatch.setattr(threaded, "encode_jpeg", noise_encoder)
    monkeypatch.setitem(threaded.FRAME_SIDE, "cpu", 64)  # the fault shows on any size; keep it fast
    properties: list[tuple[str, object]] = []
    run = RaceRun(RaceBudget(2, None))
    with pytest.raises(BugObserved, match="2 of 2 threads saw a bad frame; first: cpu 64x64 iteration 0"):
        threaded.test_threaded_encodes_under_load("cpu", 2, run, 0, lambda name, image: None, lambda *item: properties.append(item))
    (name, seconds), sightings = properties
    assert (name, list(seconds), sightings) == ("attempt_seconds", ["make", "encode", "fetch", "check"], ("sightings", 2))
    assert run.attempts == 2  # each thread's first frame, the one that saw it, is an attempt


class OnTheDevice:
    """Stands for a CUDA tensor: counts its copies to the host, which give `host` (or a name)."""

    def __init__(self, name: str, host: torch.Tensor | None = None) -> None:
        self.name, self.host, self.copies = name, host, 0
        self.shape = None if host is None else host.shape

    def cpu(self) -> torch.Tensor | str:
        self.copies += 1
        return f"{self.name} on the host" if self.host is None else self.host


def test_the_check_copies_the_source_to_the_host_once(source, good_bytes):
    """Once per frame, not once per decoder: on a GPU each copy waits for the work queued before it."""
    on_the_device = OnTheDevice("frame", host=source)
    check_jpeg(on_the_device, good_bytes, WHERE)
    assert on_the_device.copies == 1


def test_each_frame_and_its_jpeg_reach_the_host_once_before_the_check(monkeypatch):
    """The check copied the source once per decoder, each copy a wait for the device's queue."""
    made: list[OnTheDevice] = []
    checked: list[tuple[object, object]] = []

    def make(index):
        return lambda height, width, rng, device: made.append(OnTheDevice("frame")) or made[-1]

    monkeypatch.setattr(threaded, "image_maker", make)
    monkeypatch.setattr(threaded, "encode_jpeg", lambda image, quality: made.append(OnTheDevice("jpeg")) or made[-1])
    monkeypatch.setattr(threaded, "check_jpeg", lambda source, data, where, attach: checked.append((source, data)))
    threaded.test_threaded_encodes_under_load("cpu", 2, RaceRun(RaceBudget(3, None)), 0, lambda *a: None, lambda *a: None)
    assert len(made) == 12 and [item.copies for item in made] == [1] * 12
    assert checked == [("frame on the host", "jpeg on the host")] * 6


def noise_then_a_broken_call(monkeypatch) -> None:
    """A faked encode_jpeg: the first call returns noise (a sighting), the next raises a TypeError
    (a broken call), each thread stopping at its first."""
    calls = iter([noise_encoder, broken_encoder])
    lock = threading.Lock()

    def encoder(image: torch.Tensor, quality: int) -> torch.Tensor:
        with lock:
            encode = next(calls)
        return encode(image, quality)

    monkeypatch.setattr(threaded, "encode_jpeg", encoder)


def broken_encoder(image: torch.Tensor, quality: int) -> torch.Tensor:
    raise TypeError("encode_jpeg() got an unexpected keyword argument 'quality'")


@pytest.mark.catches("suites/torchvision_9060_threaded_encode/test_threaded_encodes.py::test_threaded_encodes_under_load")
def test_fault_a_threads_error_beside_another_threads_sighting_stays_an_error(monkeypatch):
    """The harness reads a group holding an error as an error (the rules' first): the test must
    raise every thread's exception, not the sighting alone."""
    noise_then_a_broken_call(monkeypatch)
    monkeypatch.setitem(threaded.FRAME_SIDE, "cpu", 64)
    with pytest.raises(ExceptionGroup, match="2 of 2 threads failed") as raised:
        threaded.test_threaded_encodes_under_load("cpu", 2, RaceRun(RaceBudget(2, None)), 0, lambda *a: None, lambda *a: None)
    assert sorted(type(error).__name__ for error in raised.value.exceptions) == ["BugObserved", "TypeError"]


# --- partial frames: the real failure is often part of a frame left from the one before ---

PARTIAL_SIZES = [(64, 64), (96, 131), (256, 256)]  # the smallest suite frame first: fewest stale rows


def two_frames(height: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(the frame before, the frame now): two gradients of one size, as the suite draws them."""
    rng = torch.Generator().manual_seed(8)
    return gradient_image(height, width, rng, CPU), gradient_image(height, width, rng, CPU)


def partly_stale(rows: slice, columns: slice, size: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(the frame now, what a faulty encode gives for it): a JPEG of the frame now whose
    [rows, columns] region holds the frame before."""
    before, now = two_frames(*size)
    partial = now.clone()
    partial[:, rows, columns] = before[:, rows, columns]
    return now, encode_jpeg(partial, quality=QUALITY)


# The whole-frame mean threshold the oracle had before its block check: these partial frames stay
# under it, so only the block check catches them.
WHOLE_FRAME_MEAN_THRESHOLD = 5.0


@pytest.mark.catches(
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_jpeg",
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_decoded",
)
@pytest.mark.parametrize("size", PARTIAL_SIZES, ids=str)
@pytest.mark.parametrize("fraction", [0.05, 0.10, 0.20], ids=["5%", "10%", "20%"])
def test_fault_bottom_rows_left_from_previous_frame(fraction, size):
    rows = max(1, round(size[0] * fraction))
    now, data = partly_stale(slice(size[0] - rows, None), slice(None), size)
    assert mean_abs_diff_255(now, decode_jpeg(data)) < WHOLE_FRAME_MEAN_THRESHOLD, "planted fault too big: a whole-frame mean would see it"
    with pytest.raises(BugObserved, match=f"block .* > {MAX_BLOCK_ABS_DIFF}"):
        check_jpeg(now, data, Where("cpu", *size, 1))


@pytest.mark.catches(
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_jpeg",
    "suites/torchvision_8587_encode_jpeg/oracle.py::check_decoded",
)
@pytest.mark.parametrize(
    ("rows", "columns"),
    [(slice(40, 44), slice(None)), (slice(None), slice(100, 104)), (slice(48, 64), slice(64, 80))],
    ids=["row-stripe", "column-stripe", "one-16x16-block"],
)
def test_fault_stripe_or_block_left_from_previous_frame(rows, columns):
    now, data = partly_stale(rows, columns, (96, 131))
    with pytest.raises(BugObserved, match=f"block .* > {MAX_BLOCK_ABS_DIFF}"):
        check_jpeg(now, data, Where("cpu", 96, 131, 1))


def test_edge_blocks_are_averaged_over_the_pixels_they_hold():
    """A 10x10 map: the bottom tiles hold 2 rows; 2 rows of 8 average 8, not 8 * 2/8."""
    pixels = torch.zeros(10, 10)
    pixels[8:] = 8.0
    assert block_means(pixels).tolist() == [[0.0, 0.0], [8.0, 8.0]]
def nvjpeg_failing_encoder(image: torch.Tensor, quality: int) -> torch.Tensor:
    """A faked encode_jpeg failing the way torchvision 0.29's CUDA encoder reports an nvJPEG status."""
    raise RuntimeError("Expected status == NVJPEG_STATUS_SUCCESS to be true, but got false.\nimage encoding failed: 6")


@pytest.mark.catches("suites/torchvision_8587_encode_jpeg/oracle.py::nvjpeg_failure_is_observed")
def test_fault_nvjpeg_status_error_mid_race_is_an_observation(monkeypatch):
    monkeypatch.setattr(threaded, "encode_jpeg", nvjpeg_failing_encoder)
    monkeypatch.setitem(threaded.FRAME_SIDE, "cpu", 64)
    with pytest.raises(BugObserved, match="2 of 2 threads saw a bad frame; first: cpu 64x64 iteration 0 thread [01]: "
                       "encode_jpeg failed inside nvJPEG: image encoding failed: 6"):
        threaded.test_threaded_encodes_under_load("cpu", 2, RaceBudget(2, None), 0, lambda *a: None, lambda *a: None)


def test_other_encoder_errors_stay_errors():
    with pytest.raises(RuntimeError, match="Input tensor dtype should be uint8"):
        with nvjpeg_failure_is_observed(WHERE):
            raise RuntimeError("Input tensor dtype should be uint8")
