"""Evidence images: small PNG thumbnails, attached to a failed or xfailed test's report as
pytest-html extras that survive the trip from an xdist worker (JSON)."""

from __future__ import annotations

import base64
import io

import pytest
import torch
from PIL import Image

from fixtures.evidence.images import THUMBNAIL_SIDE, png_thumbnail

TESTS = """
import pytest
import torch

def test_fails(attach_image):
    attach_image("source", torch.zeros(3, 400, 300, dtype=torch.uint8))
    assert False

@pytest.mark.xfail(strict=True)
def test_xfails(attach_image):
    attach_image("difference", torch.zeros(50, 60, dtype=torch.uint8))
    assert False

def test_passes(attach_image):
    attach_image("source", torch.zeros(3, 8, 8, dtype=torch.uint8))
"""


def test_png_thumbnail_is_small_png_with_aspect_kept():
    picture = Image.open(io.BytesIO(png_thumbnail(torch.zeros(3, 400, 200, dtype=torch.uint8))))
    assert picture.format == "PNG"
    assert picture.size == (THUMBNAIL_SIDE // 2, THUMBNAIL_SIDE)


def test_png_thumbnail_rejects_non_images():
    with pytest.raises(TypeError):
        png_thumbnail(torch.zeros(3, 8, 8))
    with pytest.raises(ValueError):
        png_thumbnail(torch.zeros(2, 8, 8, dtype=torch.uint8))


def test_images_reach_failed_and_xfailed_reports_only(pytester: pytest.Pytester):
    # Only the evidence plugin: no HTML report is written, which would rewrite extras in place.
    pytester.makeconftest('pytest_plugins = ["fixtures.evidence.plugin"]')
    pytester.makepyfile(test_images=TESTS)
    records = pytester.inline_run("-p", "no:cacheprovider")
    calls = {r.nodeid.split("::")[-1]: r for r in records.getreports("pytest_runtest_logreport") if r.when == "call"}
    assert [extra["name"] for extra in calls["test_fails"].extras] == ["source"]
    assert [extra["name"] for extra in calls["test_xfails"].extras] == ["difference"]
    assert not getattr(calls["test_passes"], "extras", [])
    image = Image.open(io.BytesIO(base64.b64decode(calls["test_fails"].extras[0]["content"])))
    assert image.format == "PNG" and max(image.size) <= THUMBNAIL_SIDE
    # What pytest-xdist does with a worker's report: JSON out, JSON in.
    roundtrip = type(calls["test_fails"])._from_json(calls["test_fails"]._to_json())
    assert roundtrip.extras == calls["test_fails"].extras
