"""Image blocks as the real Messages API takes them, and what they are billed.

The API takes a base64 source of one of four media types, at most 5 MB of base64 per image and
8000 pixels on a side, whose bytes really are of the type it names; it bills an image by its
pixels (about width x height / 750 tokens), not by the length of its base64. The fake checks and
bills the same, so a client that sends a mislabelled, oversized or broken image fails here as it
would there, and the cache accounting of a request with an image is of realistic size.
"""

from __future__ import annotations

import base64
import binascii
import io
from functools import lru_cache
from typing import Any, Literal

from .problems import InvalidRequest

MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_BASE64_BYTES = 5 * 1024 * 1024
MAX_SIDE = 8000
MAX_IMAGES = 100  # in one request
PIXELS_PER_TOKEN = 750
_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def check_image(block: dict[str, Any], path: str) -> None:
    """Raise InvalidRequest as the API would for a bad image block."""
    source = block.get("source")
    if not isinstance(source, dict):
        raise InvalidRequest(f"{path}.source: Field required")
    kind = source.get("type")
    if kind in ("url", "file"):
        return  # fetched or looked up by the API; nothing in the request to check
    if kind != "base64":
        raise InvalidRequest(f"{path}.source: Input tag '{kind}' found using 'type' does not match any of the "
                             "expected tags: 'base64', 'url', 'file'")
    where = f"{path}.source.base64"
    media = source.get("media_type")
    if media not in MEDIA_TYPES:
        allowed = ", ".join(f"'{m}'" for m in MEDIA_TYPES)
        raise InvalidRequest(f"{where}.media_type: Input should be {allowed}")
    data = source.get("data")
    if not isinstance(data, str):
        raise InvalidRequest(f"{where}.data: Field required")
    if len(data) > MAX_BASE64_BYTES:
        raise InvalidRequest(f"{where}: image exceeds 5 MB maximum: {len(data)} bytes > {MAX_BASE64_BYTES} bytes")
    found = _info(data)
    if found is False:
        raise InvalidRequest(f"{where}.data: invalid base64 data")
    if not isinstance(found, tuple):
        raise InvalidRequest(f"{where}.data: Could not process image")
    actual, width, height = found
    if actual != media:
        raise InvalidRequest(f"{where}.data: Image does not match the provided media type {media}")
    if width > MAX_SIDE or height > MAX_SIDE:
        raise InvalidRequest(f"{where}.data: At least one of the image dimensions exceed max allowed size: "
                             f"{MAX_SIDE} pixels")


def image_tokens(block: dict[str, Any]) -> int | None:
    """What the API bills for an image block (None: not a base64 image block it could read)."""
    source = block.get("source")
    if block.get("type") != "image" or not isinstance(source, dict) or source.get("type") != "base64":
        return None
    found = _info(str(source.get("data", "")))
    if not isinstance(found, tuple):
        return None
    _, width, height = found
    return max(1, -(-width * height // PIXELS_PER_TOKEN))


@lru_cache(maxsize=64)
def _info(data: str) -> tuple[str, int, int] | None | Literal[False]:
    """What `_opened` says of base64 `data` (False: not base64); each image is decoded once,
    however many requests carry it."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return _opened(raw)


def _opened(raw: bytes) -> tuple[str, int, int] | None:
    """(media type, width, height) of an image whose bytes decode whole, else None."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(raw)) as image:
            image.load()
            media = _FORMATS.get(str(image.format))
            return (media, *image.size) if media else None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError):
        return None
