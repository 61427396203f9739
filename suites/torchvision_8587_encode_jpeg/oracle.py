"""The oracle: does this JPEG decode, with an independent decoder and with torchvision's, to the
image that was encoded?

Decoding errors (not a JPEG, truncated, corrupt), a mean absolute difference over the threshold
and one 8x8 block far off (a partial frame: rows or blocks left from the previous frame,
stripes) are findings (BugObserved), never crashes. Every message names device, size,
iteration, thread and the difference, so a failure in a threaded stress run can be replayed.
"""

from __future__ import annotations

import io
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageFile

from fixtures.known_bugs.library_api import library_api
from fixtures.known_bugs.outcomes import BugObserved

decode_jpeg = library_api("torchvision.io", "decode_jpeg", first_release="0.8.0")

# Differences are mean absolute differences in 0-255 units (upstream's "x255" on [0, 1] images),
# judged per 8x8 block (JPEG's DCT block, the unit a broken encode goes wrong in) over its pixels
# and channels. One threshold: a whole-frame mean is a weighted mean of the block means, so it never
# exceeds the worst block, and a partial frame (bottom 5-20% of rows stale) averages only 1-4 over
# the frame. Correct encodes measured by `python bench/jpeg_block_calibration.py` (torchvision
# 0.29.2, CPU libjpeg, q=100, 4:2:0, gradients and textures, contiguous and channels-last, 100
# sizes with sides 64-2048): worst block 1.19, whole-frame mean 0.59. 4.0 leaves 3.4x headroom
# (upstream judged whole frames at 5.0); the smallest stale region the fault tests plant (3 stale
# rows at the bottom of a 64-row frame) scores 9.4, noise and wrong frames 17-30. nvJPEG encodes
# 4:4:4 (no chroma subsampling), so a correct GPU encode should stay closer still (argued, not run).
# The GPU decode tests decode libjpeg's 4:2:0 bytes with nvJPEG, which replicates chroma where
# libjpeg interpolates: `--chroma nearest` estimates that decoder on the CPU (40 sizes, sides to
# 1024): worst block 1.05 against 1.07, as these frames' chroma varies slowly; measured on the CPU,
# not on nvJPEG (whose IDCT rounding may add a level: argued).
BLOCK = 8
MAX_BLOCK_ABS_DIFF = 4.0
QUALITY = 100  # the upstream reproducer's quality: any visible loss is then a defect
DIFFERENCE_GAIN = 8  # difference maps are amplified so a few levels of error are visible
MAX_CHANNELS = 128  # 255 x 128 still fits the int16 the channels are summed in

ImageSink = Callable[[str, torch.Tensor], None]
# warnings.catch_warnings swaps process-wide state (not thread-safe before Python 3.14): threads
# checking frames at once take turns. Pillow's warnings are recorded, never raised: an "error"
# filter in force would turn another thread's warning (torchvision's deprecation notice, as it
# encodes) into that thread's exception.
_PILLOW_WARNINGS = threading.Lock()
# torchvision 0.29 deprecates its codecs in favour of TorchCodec and says so on every call.
TORCHVISION_IO_DEPRECATION = "The image decoding and encoding capabilities of TorchVision"


@dataclass(frozen=True)
class Where:
    """Which frame: enough to find it again in a stress run."""

    device: str
    height: int
    width: int
    iteration: int
    thread: int = 0

    def __str__(self) -> str:
        return f"{self.device} {self.height}x{self.width} iteration {self.iteration} thread {self.thread}"


class CorruptJpeg(Exception):
    """A decoder rejected the bytes (not a JPEG, truncated, corrupt)."""


def decode_with_pillow(data: bytes) -> torch.Tensor:
    """Decode with Pillow, treating truncated data and any decoder warning as an error."""
    try:
        with _PILLOW_WARNINGS, warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ImageFile.LOAD_TRUNCATED_IMAGES = False  # the default; a test must not inherit a looser one
            with Image.open(io.BytesIO(data)) as picture:
                if picture.format != "JPEG":
                    raise CorruptJpeg(f"Pillow reads these bytes as {picture.format}, not JPEG")
                pixels = np.asarray(picture.convert("RGB"))
    except (OSError, SyntaxError, ValueError) as error:  # UnidentifiedImageError is an OSError
        raise CorruptJpeg(f"Pillow: {type(error).__name__}: {error}") from error
    pillows = [warning for warning in seen if _from_pillow(warning)]
    if pillows:
        raise CorruptJpeg(f"Pillow: {pillows[0].category.__name__}: {pillows[0].message}")
    return torch.from_numpy(pixels.copy()).permute(2, 0, 1)


def _from_pillow(warning: warnings.WarningMessage) -> bool:
    """Whether Pillow warned this (from its own files, or at its caller here); not a warning another
    thread made meanwhile."""
    return "PIL" in Path(warning.filename).parts or warning.filename == __file__


def decode_with_torchvision(data: torch.Tensor, device: str = "cpu") -> torch.Tensor:
    """Decode with torchvision.io.decode_jpeg (nvJPEG where `device` is CUDA), as RGB."""
    try:
        return decode_jpeg(data.cpu(), device=device)
    except RuntimeError as error:
        raise CorruptJpeg(f"torchvision decode_jpeg(device={device!r}): {error}") from error


def pixel_abs_diff_255(source: torch.Tensor, decoded: torch.Tensor) -> torch.Tensor:
    """|source - decoded| x255 per pixel, averaged over the channels: an (H, W) float map, computed
    once per decoded frame (the mean and the blocks both read it; 4096x4096 frames are costly).
    uint8 images: the differences and their sum over the channels are exact in int16 (at most
    255 x MAX_CHANNELS), in half the time of float's, and the one division gives float's mean to
    the bit."""
    images = source.dtype == decoded.dtype == torch.uint8 and source.dim() == 3 and decoded.shape == source.shape
    if not images or source.shape[0] > MAX_CHANNELS:
        shapes = f"{source.dtype} {tuple(source.shape)} and {decoded.dtype} {tuple(decoded.shape)}"
        raise TypeError(f"the JPEG oracle compares uint8 CHW images of one shape, got {shapes}")
    total = (source.cpu().to(torch.int16) - decoded.cpu().to(torch.int16)).abs_().sum(dim=0, dtype=torch.int16)
    return total.float().div_(source.shape[0])


def mean_abs_diff_255(source: torch.Tensor, decoded: torch.Tensor) -> float:
    return pixel_abs_diff_255(source, decoded).mean().item()


def block_means(pixels: torch.Tensor, block: int = BLOCK) -> torch.Tensor:
    """The mean of each block x block tile of an (H, W) map, as a grid; the tiles at the right and
    bottom edges are averaged over the pixels they hold."""
    return F.avg_pool2d(pixels[None, None], block, ceil_mode=True)[0, 0]


def block_abs_diff_255(source: torch.Tensor, decoded: torch.Tensor) -> torch.Tensor:
    """Mean |source - decoded| x255 of each 8x8 block (all channels), as a grid."""
    return block_means(pixel_abs_diff_255(source, decoded))


def difference_map(source: torch.Tensor, decoded: torch.Tensor) -> torch.Tensor:
    """|source - decoded| per pixel, amplified, as a viewable uint8 image."""
    difference = (source.cpu().int() - decoded.cpu().int()).abs() * DIFFERENCE_GAIN
    return difference.clamp(0, 255).to(torch.uint8)


def check_decoded(
    source: torch.Tensor, decoded: torch.Tensor, where: Where, decoder: str, attach: ImageSink | None = None
) -> float:
    """The mean absolute difference of `decoded` against `source`; BugObserved when one 8x8 block is
    over the threshold, or on a shape mismatch (a frame of another size is a wrong frame, too)."""
    if decoded.shape != source.shape:
        _attach(attach, where, source=source)
        raise BugObserved(
            f"{where}: {decoder} decoded shape {tuple(decoded.shape)}, expected {tuple(source.shape)}"
        )
    pixels = pixel_abs_diff_255(source, decoded)
    difference = pixels.mean().item()
    blocks = block_means(pixels)
    worst = blocks.max().item()
    if worst > MAX_BLOCK_ABS_DIFF:
        row, column = divmod(int(blocks.argmax()), blocks.shape[1])
        bad = int((blocks > MAX_BLOCK_ABS_DIFF).sum())
        _attach(attach, where, source=source, decoded=decoded, difference=difference_map(source, decoded))
        raise BugObserved(
            f"{where}: {decoder} worst {BLOCK}x{BLOCK} block (rows {row * BLOCK}-, columns {column * BLOCK}-) "
            f"mean |difference| x255 = {worst:.2f} > {MAX_BLOCK_ABS_DIFF}; {bad} of {blocks.numel()} blocks over "
            f"({'noise or a wrong frame' if bad == blocks.numel() else 'a partial frame: stale rows or blocks, stripes'}); "
            f"whole-frame mean {difference:.2f}"
        )
    return difference


def check_jpeg(source: torch.Tensor, data: torch.Tensor, where: Where, attach: ImageSink | None = None) -> float:
    """Decode encoded `data` with Pillow and with torchvision on CPU and compare both to
    `source`; the worse difference. Raises BugObserved on a decoding error or a difference. Both
    reach the host once (on a GPU each copy waits for the work queued before it)."""
    data, source = data.cpu(), source.cpu()
    try:
        decoded = {
            "Pillow": decode_with_pillow(data.numpy().tobytes()),
            "torchvision (cpu)": decode_with_torchvision(data),
        }
    except CorruptJpeg as error:
        _attach(attach, where, source=source)
        raise BugObserved(f"{where}: corrupt JPEG ({data.numel()} bytes): {error}") from error
    return max(check_decoded(source, image, where, decoder, attach) for decoder, image in decoded.items())


def check_untouched(sums: list[int], numel: int, where: Where) -> None:
    """Tensor i (1-based) was filled with i before being freed; its queued sum must be i * numel.
    BugObserved otherwise: something (the decoder) wrote into it before the sum ran."""
    for fill, total in enumerate(sums, start=1):
        if total != fill * numel:
            raise BugObserved(
                f"{where}: a tensor freed before decode_jpeg summed to {total}, expected {fill * numel}: "
                f"the decoder wrote into memory the caller's stream was still reading"
            )


# What torchvision (0.19-0.29, csrc/io/image/cuda/encode_jpegs_cuda.cpp; the same texts are in
# 0.29.1's image_stable.so) puts in the RuntimeError when an nvJPEG call of an encode returns a
# failure status. Mid-race such a failure is the corruption itself, seen from inside nvJPEG.
NVJPEG_ENCODE_FAILURES = (
    "image encoding failed: ",
    "Failed to retrieve encoded image stream state: ",
    "Failed to retrieve encoded image: ",
    "Failed to set nvjpeg encoder params quality: ",
    "Failed to set nvjpeg encoder params sampling factors: ",
)


@contextmanager
def nvjpeg_failure_is_observed(where: Where) -> Iterator[None]:
    """Around an encode_jpeg call in a race test: an nvJPEG failure status becomes BugObserved
    (corrupt output, reported by the encoder); any other error stays an error."""
    try:
        yield
    except RuntimeError as error:
        if not any(text in str(error) for text in NVJPEG_ENCODE_FAILURES):
            raise
        raise BugObserved(f"{where}: encode_jpeg failed inside nvJPEG: {str(error).strip().splitlines()[-1]}") from error


def _attach(attach: ImageSink | None, where: Where, **images: torch.Tensor) -> None:
    if attach is not None:
        for name, image in images.items():
            attach(f"{name} ({where})", image)
