"""The parts the torchvision-8587 oracle is built from: its two decoders reject what is not a
good JPEG with a message naming the decoder, the per-pixel difference is float's to the bit, the
difference map shows the error amplified, a
finding attaches the frames it is about, and a freed tensor's wrong sum is reported exactly."""

from __future__ import annotations

import io
import threading
import warnings
from pathlib import Path

import pytest
import torch
from PIL import Image
from torchvision.io import encode_jpeg

from fixtures.known_bugs.outcomes import BugObserved
from suites.torchvision_8587_encode_jpeg import oracle
from suites.torchvision_8587_encode_jpeg.oracle import (
    MAX_BLOCK_ABS_DIFF,
    TORCHVISION_IO_DEPRECATION,
    CorruptJpeg,
    Where,
    check_decoded,
    check_jpeg,
    check_untouched,
    decode_with_pillow,
    decode_with_torchvision,
    difference_map,
    pixel_abs_diff_255,
)

pytestmark = pytest.mark.filterwarnings(f"ignore:{TORCHVISION_IO_DEPRECATION}:DeprecationWarning")

WHERE = Where("cpu", 16, 24, iteration=2, thread=1)


def test_pillow_rejects_another_format_by_name() -> None:
    png = io.BytesIO()
    Image.new("RGB", (8, 8)).save(png, "PNG")
    with pytest.raises(CorruptJpeg) as raised:
        decode_with_pillow(png.getvalue())
    assert str(raised.value) == "Pillow reads these bytes as PNG, not JPEG"


def test_pillow_names_its_error_type_on_truncated_bytes() -> None:
    data = encode_jpeg(torch.zeros(3, 16, 16, dtype=torch.uint8)).numpy().tobytes()
    with pytest.raises(CorruptJpeg) as raised:
        decode_with_pillow(data[: len(data) // 2])
    assert str(raised.value).startswith("Pillow: OSError: ")


def test_pillow_decodes_to_channels_first_rgb() -> None:
    source = torch.arange(3 * 16 * 24, dtype=torch.int64).remainder(256).to(torch.uint8).view(3, 16, 24)
    decoded = decode_with_pillow(encode_jpeg(source, quality=100).numpy().tobytes())
    assert decoded.shape == (3, 16, 24) and decoded.dtype == torch.uint8


def test_torchvision_decoder_names_itself_and_its_device() -> None:
    with pytest.raises(CorruptJpeg) as raised:
        decode_with_torchvision(torch.zeros(100, dtype=torch.uint8))
    assert str(raised.value).startswith("torchvision decode_jpeg(device='cpu'): ")


@pytest.mark.parametrize("channels", [1, 3])
def test_the_per_pixel_difference_is_floats_mean_to_the_bit(channels: int) -> None:
    rng = torch.Generator().manual_seed(channels)
    source, decoded = (torch.randint(0, 256, (channels, 40, 56), generator=rng, dtype=torch.uint8) for _ in range(2))
    source[:, 0], decoded[:, 0] = 255, 0  # the widest difference, in every channel
    expected = (source.float() - decoded.float()).abs().mean(dim=0)
    pixels = pixel_abs_diff_255(source, decoded)
    assert pixels.dtype == torch.float32 and torch.equal(pixels, expected) and torch.all(pixels[0] == 255)


@pytest.mark.parametrize(
    ("source", "decoded"),
    [
        (torch.rand(3, 8, 8), torch.zeros(3, 8, 8, dtype=torch.uint8)),  # a [0, 1] float image, which int16 would truncate
        (torch.zeros(3, 8, 8, dtype=torch.uint8), torch.zeros(3, 8, 8, dtype=torch.int16)),
        (torch.zeros(200, 4, dtype=torch.uint8), torch.zeros(200, 4, dtype=torch.uint8)),  # no channels: 200 rows summed in int16
        (torch.zeros(129, 2, 2, dtype=torch.uint8), torch.zeros(129, 2, 2, dtype=torch.uint8)),
        (torch.zeros(3, 8, 8, dtype=torch.uint8), torch.zeros(2, 3, 8, 8, dtype=torch.uint8)),  # a batch would broadcast
    ],
)
def test_the_per_pixel_difference_refuses_what_is_not_two_uint8_chw_images_of_one_shape(source: torch.Tensor, decoded: torch.Tensor) -> None:
    with pytest.raises(TypeError, match="the JPEG oracle compares uint8 CHW images of one shape, got "):
        pixel_abs_diff_255(source, decoded)


def test_difference_map_amplifies_and_saturates() -> None:
    source = torch.full((1, 1, 3), 10, dtype=torch.uint8)
    decoded = torch.tensor([[[10, 11, 50]]], dtype=torch.uint8)  # 40 x 8 = 320: beyond uint8, so 255
    difference = difference_map(source, decoded)
    assert difference.dtype == torch.uint8
    # One level shows as 8: errors up to 31 levels stay graded (the block threshold, 4 levels, is
    # 32), past that white. A gain ten times larger would saturate at the threshold already.
    assert difference.tolist() == [[[0, 8, 255]]]
    assert torch.equal(difference_map(decoded, source), difference)  # |a - b|, either order


def test_a_corrupt_frame_attaches_its_source_named_by_where() -> None:
    source = torch.zeros(3, 16, 24, dtype=torch.uint8)
    attached: list[tuple[str, torch.Tensor]] = []
    with pytest.raises(BugObserved):
        check_jpeg(source, torch.zeros(100, dtype=torch.uint8), WHERE, lambda name, image: attached.append((name, image)))
    assert [name for name, _ in attached] == [f"source ({WHERE})"]
    assert attached[0][1] is source


def test_a_finding_names_the_decoder_that_saw_it() -> None:
    """Pillow decodes first: a wrong frame is reported as Pillow's finding, by that name."""
    source = torch.zeros(3, 16, 24, dtype=torch.uint8)
    wrong = encode_jpeg(torch.full((3, 16, 24), 200, dtype=torch.uint8), quality=100)
    with pytest.raises(BugObserved, match=f"^{WHERE}: Pillow worst 8x8 block"):
        check_jpeg(source, wrong, WHERE)


def test_a_finding_of_torchvisions_decoder_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pillow agrees with the source, torchvision's decode (faked here) does not."""
    source = torch.zeros(3, 16, 24, dtype=torch.uint8)
    monkeypatch.setattr(oracle, "decode_with_torchvision", lambda data: torch.full_like(source, 200))
    with pytest.raises(BugObserved, match=rf"^{WHERE}: torchvision \(cpu\) worst 8x8 block"):
        check_jpeg(source, encode_jpeg(source, quality=100), WHERE)


def test_a_frame_of_another_size_attaches_its_source() -> None:
    source = torch.zeros(3, 16, 24, dtype=torch.uint8)
    attached: list[tuple[str, torch.Tensor]] = []
    with pytest.raises(BugObserved):
        check_decoded(source, torch.zeros(3, 24, 16, dtype=torch.uint8), WHERE, "faked", lambda *item: attached.append(item))
    assert attached == [(f"source ({WHERE})", source)]


def test_a_wrong_frame_attaches_source_decoded_and_their_difference() -> None:
    source = torch.zeros(3, 16, 24, dtype=torch.uint8)
    decoded = torch.full((3, 16, 24), 200, dtype=torch.uint8)
    attached: dict[str, torch.Tensor] = {}
    with pytest.raises(BugObserved, match="mean"):
        check_decoded(source, decoded, WHERE, "faked", lambda name, image: attached.__setitem__(name, image))
    assert list(attached) == [f"{name} ({WHERE})" for name in ("source", "decoded", "difference")]
    assert attached[f"source ({WHERE})"] is source and attached[f"decoded ({WHERE})"] is decoded
    assert torch.equal(attached[f"difference ({WHERE})"], difference_map(source, decoded))


def test_a_uniform_difference_is_every_block_and_named_a_wrong_frame() -> None:
    source = torch.zeros(3, 16, 24, dtype=torch.uint8)
    decoded = torch.full((3, 16, 24), int(MAX_BLOCK_ABS_DIFF) + 1, dtype=torch.uint8)
    with pytest.raises(
        BugObserved, match=f"^{WHERE}: faked worst 8x8 block .* 6 of 6 blocks over \\(noise or a wrong frame\\); whole-frame mean 5.00"
    ):
        check_decoded(source, decoded, WHERE, "faked")


def test_a_stale_block_is_located_counted_and_attached() -> None:
    """One 8x8 block off by 200 (rows 16-23, columns 40-47) and one exactly at the block threshold
    (which is not over it), in a frame whose whole-frame mean stays under the block threshold."""
    source = torch.zeros(3, 64, 64, dtype=torch.uint8)
    decoded = source.clone()
    decoded[:, 16:24, 40:48] = 200
    decoded[:, 0:8, 0:8] = int(MAX_BLOCK_ABS_DIFF)
    attached: dict[str, torch.Tensor] = {}
    with pytest.raises(BugObserved) as raised:
        check_decoded(source, decoded, WHERE, "faked", lambda name, image: attached.__setitem__(name, image))
    assert str(raised.value) == (
        f"{WHERE}: faked worst 8x8 block (rows 16-, columns 40-) mean |difference| x255 = 200.00 > "
        f"{MAX_BLOCK_ABS_DIFF}; 1 of 64 blocks over (a partial frame: stale rows or blocks, stripes); "
        "whole-frame mean 3.19"
    )
    assert attached[f"source ({WHERE})"] is source and attached[f"decoded ({WHERE})"] is decoded
    assert torch.equal(attached[f"difference ({WHERE})"], difference_map(source, decoded))


def test_a_block_at_its_threshold_is_not_over_it() -> None:
    source = torch.zeros(3, 64, 64, dtype=torch.uint8)
    decoded = source.clone()
    decoded[:, 8:16, 8:16] = int(MAX_BLOCK_ABS_DIFF)
    assert check_decoded(source, decoded, WHERE, "faked") == pytest.approx(MAX_BLOCK_ABS_DIFF / 64)


def test_a_written_freed_tensor_is_reported_with_both_sums() -> None:
    with pytest.raises(BugObserved) as raised:
        check_untouched([10, 20, 29], 10, WHERE)
    assert str(raised.value) == (
        f"{WHERE}: a tensor freed before decode_jpeg summed to 29, expected 30: "
        "the decoder wrote into memory the caller's stream was still reading"
    )


def test_a_pillow_warning_is_a_corrupt_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    """What Pillow only warns of (a decompression bomb, a broken EXIF block) still rejects the frame."""
    data = encode_jpeg(torch.full((3, 16, 16), 128, dtype=torch.uint8), quality=100).numpy().tobytes()
    opened = Image.open

    def warning_open(*args, **kwargs):
        warnings.warn_explicit("Corrupt EXIF data", UserWarning, str(Path(Image.__file__)), 1)
        return opened(*args, **kwargs)

    monkeypatch.setattr(Image, "open", warning_open)
    with pytest.raises(CorruptJpeg, match="^Pillow: UserWarning: Corrupt EXIF data$"):
        decode_with_pillow(data)


def test_another_threads_warning_during_a_pillow_decode_is_neither_raised_nor_charged(monkeypatch: pytest.MonkeyPatch) -> None:
    """torchvision warns of its deprecation on every encode; a thread encoding while another decodes
    with Pillow once met that decode's "error" filter and failed (seen in a range scan: 9060's
    threaded test). Now the notice stays a warning, and the frame decodes."""
    data = encode_jpeg(torch.full((3, 16, 16), 128, dtype=torch.uint8), quality=100).numpy().tobytes()
    opened, raised = Image.open, []

    def encode_elsewhere() -> None:
        try:
            warnings.warn(TORCHVISION_IO_DEPRECATION + " (test)", DeprecationWarning, stacklevel=1)
            warnings.warn("another library's notice", UserWarning, stacklevel=1)
        except Warning as error:
            raised.append(error)

    def open_while_another_thread_warns(*args, **kwargs):
        thread = threading.Thread(target=encode_elsewhere)
        thread.start()
        thread.join()
        return opened(*args, **kwargs)

    monkeypatch.setattr(Image, "open", open_while_another_thread_warns)
    assert decode_with_pillow(data).shape == (3, 16, 16)
    assert raised == []
