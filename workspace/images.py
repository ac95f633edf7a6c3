"""Image files a person attaches (`@shot.png`, `scribe run --image`): read with care, checked to
be what they claim, and sized down to what the Messages API takes.

The API takes PNG, JPEG, GIF and WebP, at most 8000x8000 pixels and 5 MB of base64 per image,
and scales anything beyond 1568 pixels on a side or about 1.15 megapixels down itself (which
only costs time to first token). So an image within those bounds is sent as the very bytes of
the file; a larger one is scaled down, keeping its aspect ratio, to fit them, and re-encoded in
its own format (a GIF as PNG); one whose base64 would still pass 5 MB is encoded as JPEG.

Refused, with the reason in a few words (the caller names the file): anything but a regular
file (a FIFO would block the read), a file over MAX_FILE_BYTES (never read), bytes that are not
one of the four formats whatever the name says, an image that does not decode whole (truncated,
corrupt), and one over MAX_SOURCE_PIXELS (a decompression bomb: a small file that would expand
to gigabytes). Pillow is imported only when an image is attached.
"""

from __future__ import annotations

import io
import math
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path

# Larger files are refused before a byte is read: no screenshot is this large.
MAX_FILE_BYTES = 50 * 1024 * 1024
# The API's own limits, and the size past which it scales an image down anyway.
MAX_API_SIDE = 8000
MAX_BASE64_BYTES = 5 * 1024 * 1024
FIT_SIDE = 1568
FIT_PIXELS = 1_150_000
# Decoding more pixels than this is refused (8000x8000: the largest image the API takes).
MAX_SOURCE_PIXELS = MAX_API_SIDE * MAX_API_SIDE

# Format sniffed from the first bytes -> (media type, Pillow's format name).
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png", "PNG"),
    (b"\xff\xd8\xff", "image/jpeg", "JPEG"),
    (b"GIF87a", "image/gif", "GIF"),
    (b"GIF89a", "image/gif", "GIF"),
)
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})


class ImageRefused(Exception):
    """Why an image is not attached, in a few words (the caller names the file)."""


@dataclass(frozen=True)
class PreparedImage:
    name: str
    data: bytes  # what is sent and kept
    media_type: str
    width: int
    height: int
    source_width: int
    source_height: int

    @property
    def resized(self) -> bool:
        return (self.width, self.height) != (self.source_width, self.source_height)

    def describe(self) -> str:
        size = f"{self.width}x{self.height}"
        if self.resized:
            size = f"{self.source_width}x{self.source_height}, sized down to {size}"
        return f"attached image {self.name} ({size}, {_human(len(self.data))})"


def sniff(head: bytes) -> tuple[str, str] | None:
    """(media type, Pillow format) of an image the API takes, from its first bytes; else None."""
    for magic, media, kind in _MAGIC:
        if head.startswith(magic):
            return media, kind
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp", "WEBP"
    return None


def looks_like_image(path: Path) -> bool:
    """Named like an image, or starting with an image's bytes (a screenshot saved without a suffix)."""
    if path.suffix.lower() in IMAGE_SUFFIXES:
        return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO is looked at, never waited on
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and sniff(os.read(fd, 16)) is not None
    except OSError:
        return False
    finally:
        os.close(fd)


def read_image_file(path: Path) -> bytes:
    """The file's bytes, if it is a regular file no larger than MAX_FILE_BYTES. Opened without
    blocking and checked on the open file, so a FIFO or device swapped in after a look is
    refused, not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ImageRefused(f"cannot be read ({(exc.strerror or str(exc)).lower()})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ImageRefused("not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise ImageRefused(f"{_human(info.st_size)}, larger than the {_human(MAX_FILE_BYTES)} an image may be")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # it grew while read
        raise ImageRefused(f"larger than the {_human(MAX_FILE_BYTES)} an image may be")
    return data


def prepare_image(name: str, data: bytes) -> PreparedImage:
    """`data` as it will be sent: as it is when the API takes it so, else sized down (see the
    module's docstring). Raises ImageRefused."""
    found = sniff(data[:16])
    if found is None:
        claimed = Path(name).suffix.lower().lstrip(".").upper().replace("JPG", "JPEG")
        what = f"not a {claimed} image" if claimed else "not an image"
        raise ImageRefused(f"{what} (PNG, JPEG, GIF and WebP are attached)")
    media, kind = found
    from PIL import Image, UnidentifiedImageError  # here: only a person attaching an image pays for Pillow

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=[kind])
            width, height = image.size
            if width * height > MAX_SOURCE_PIXELS:
                raise ImageRefused(f"{width}x{height}: more pixels than the {MAX_API_SIDE}x{MAX_API_SIDE} "
                                   "the API takes")
            image.load()  # decodes it whole: a truncated or corrupt file fails here
    except ImageRefused:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageRefused(f"more pixels than the {MAX_API_SIDE}x{MAX_API_SIDE} the API takes") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageRefused(f"a {kind} image that cannot be decoded ({_reason(exc)})") from None
    scale = min(1.0, FIT_SIDE / max(width, height), math.sqrt(FIT_PIXELS / (width * height)))
    if scale >= 1.0 and _base64_size(len(data)) <= MAX_BASE64_BYTES:
        return PreparedImage(name, data, media, width, height, width, height)
    size = (max(1, int(width * scale)), max(1, int(height * scale)))
    smaller = image.resize(size, Image.Resampling.LANCZOS) if scale < 1.0 else image
    encoded, media = _encode(smaller, kind)
    if _base64_size(len(encoded)) > MAX_BASE64_BYTES:
        encoded, media = _encode(smaller, "JPEG")
    if _base64_size(len(encoded)) > MAX_BASE64_BYTES:
        raise ImageRefused(f"still over the API's 5 MB when sized down to {size[0]}x{size[1]}")
    return PreparedImage(name, encoded, media, size[0], size[1], width, height)


def _encode(image: object, kind: str) -> tuple[bytes, str]:
    from PIL import Image

    assert isinstance(image, Image.Image)
    out = io.BytesIO()
    if kind == "JPEG":
        flat = image.convert("RGB") if image.mode not in ("RGB", "L") else image
        flat.save(out, "JPEG", quality=85, optimize=True)
        return out.getvalue(), "image/jpeg"
    if kind == "WEBP":
        image.save(out, "WEBP", quality=85)
        return out.getvalue(), "image/webp"
    # PNG, and a GIF's first frame: a resized GIF's palette would band, PNG keeps it exact.
    converted = image if image.mode in ("1", "L", "LA", "P", "RGB", "RGBA") else image.convert("RGBA")
    converted.save(out, "PNG", optimize=True)
    return out.getvalue(), "image/png"


def _base64_size(raw: int) -> int:
    return 4 * ((raw + 2) // 3)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().rstrip(".") or type(exc).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _human(count: int) -> str:
    if count < 1024 * 1024:
        return f"{count / 1024:.0f} KB"
    if count < 1024 ** 3:
        return f"{count / (1024 * 1024):.1f} MB"
    return f"{count / 1024 ** 3:.1f} GB"
