"""workspace/images.py: an attached image is read with care, is what it claims, and fits the API."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path

import pytest
from PIL import Image

from scribe.workspace.images import (
    FIT_PIXELS,
    FIT_SIDE,
    MAX_BASE64_BYTES,
    MAX_FILE_BYTES,
    ImageRefused,
    looks_like_image,
    prepare_image,
    read_image_file,
)


def picture(width: int, height: int, kind: str = "PNG", *, noisy: bool = False) -> bytes:
    """A real image of that size: a gradient, or noise (which no encoder can shrink)."""
    if noisy:  # with an alpha channel: four incompressible bytes a pixel
        image = Image.frombytes("RGBA", (width, height), os.urandom(width * height * 4))
    else:
        image = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    out = io.BytesIO()
    image.save(out, kind)
    return out.getvalue()


def test_an_image_within_the_api_bounds_is_sent_as_the_very_bytes_of_the_file() -> None:
    data = picture(800, 600, "JPEG")
    prepared = prepare_image("shot.jpg", data)
    assert prepared.data == data and prepared.media_type == "image/jpeg"
    assert (prepared.width, prepared.height) == (800, 600) and not prepared.resized


@pytest.mark.parametrize("kind", ["PNG", "JPEG", "GIF", "WEBP"])
def test_a_large_image_is_sized_down_to_the_bounds_keeping_its_shape(kind: str) -> None:
    prepared = prepare_image(f"big.{kind.lower()}", picture(3000, 2000, kind))
    assert prepared.resized and prepared.source_width == 3000
    assert max(prepared.width, prepared.height) <= FIT_SIDE and prepared.width * prepared.height <= FIT_PIXELS
    assert abs(prepared.width / prepared.height - 1.5) < 0.01
    with Image.open(io.BytesIO(prepared.data)) as image:  # what is sent is what it says
        assert image.size == (prepared.width, prepared.height)
        assert prepared.media_type == {"PNG": "image/png", "GIF": "image/png", "JPEG": "image/jpeg",
                                       "WEBP": "image/webp"}[kind]
    assert "3000x2000, sized down to" in prepared.describe()


def test_an_image_whose_base64_would_pass_five_megabytes_is_sent_as_jpeg() -> None:
    data = picture(1070, 1070, "PNG", noisy=True)  # within the pixel bounds, but ~4.6 MB of PNG
    assert len(base64.b64encode(data)) > MAX_BASE64_BYTES
    prepared = prepare_image("noise.png", data)
    assert prepared.media_type == "image/jpeg"
    assert len(base64.b64encode(prepared.data)) <= MAX_BASE64_BYTES


@pytest.mark.parametrize(("name", "data", "why"), [
    ("fake.png", b"this is a text file, whatever its name says\n", "not a PNG image"),
    ("cut.png", picture(400, 300)[:200], "a PNG image that cannot be decoded"),
    ("noext", b"\x00\x01\x02binary", "not an image"),
])
def test_what_is_not_a_whole_image_is_refused_in_a_few_words(name: str, data: bytes, why: str) -> None:
    with pytest.raises(ImageRefused) as refused:
        prepare_image(name, data)
    assert str(refused.value).startswith(why) and "\n" not in str(refused.value)


@pytest.mark.parametrize("side", [9000, 20000])
def test_a_decompression_bomb_is_refused_before_it_is_decoded(side: int) -> None:
    # side x side pixels of one colour: kilobytes of PNG, up to 1.2 GB once decoded
    out = io.BytesIO()
    Image.new("1", (side, side)).save(out, "PNG")
    assert len(out.getvalue()) < 200_000
    with pytest.raises(ImageRefused, match="more pixels than the 8000x8000 the API takes"):
        prepare_image("bomb.png", out.getvalue())


def test_a_fifo_and_a_huge_file_are_refused_without_being_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    with pytest.raises(ImageRefused, match="not a regular file"):
        read_image_file(fifo)  # returns at once: nothing writes to the pipe
    huge = tmp_path / "huge.png"
    with huge.open("wb") as handle:
        handle.truncate(2 * 1024 ** 3)  # 2 GB, sparse
    with pytest.raises(ImageRefused, match=r"2\.0 GB, larger than the 50\.0 MB"):
        read_image_file(huge)
    assert MAX_FILE_BYTES < 2 * 1024 ** 3


def test_a_file_is_taken_for_an_image_by_its_name_or_bytes_and_a_fifo_is_never_waited_on(tmp_path: Path) -> None:
    (tmp_path / "screenshot").write_bytes(picture(20, 20))
    (tmp_path / "notes").write_text("plain text\n")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    assert looks_like_image(tmp_path / "screenshot") and looks_like_image(tmp_path / "any.JPG")
    assert not any(looks_like_image(tmp_path / name) for name in ("notes", "pipe", "folder", "missing"))
