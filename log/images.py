"""An image a person attached to a message, as its user event records it: the name they gave,
the sha256 of the bytes sent (the key of the session's image store, log/attachments.py), the
media type and the size in pixels and bytes.

The record is what render, the token estimate, the observer, `recall` and the session page read;
the bytes themselves live beside the log, never in it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The types the Messages API takes, and the file name extension each is stored under.
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
# The API bills an image by its pixels: about width x height / 750 tokens.
PIXELS_PER_TOKEN = 750


@dataclass(frozen=True)
class ImageRef:
    name: str  # as the person named it (`@shot.png`, `--image shot.png`)
    sha256: str  # of the bytes sent (after any resizing)
    media_type: str
    width: int
    height: int
    bytes: int

    @property
    def extension(self) -> str:
        return EXTENSIONS.get(self.media_type, "bin")

    @property
    def file_name(self) -> str:
        """Its name in the session's image store."""
        return f"{self.sha256}.{self.extension}"

    @property
    def tokens(self) -> int:
        """What the API bills for it, by the documented estimate."""
        return max(1, -(-self.width * self.height // PIXELS_PER_TOKEN))

    def describe(self) -> str:
        """`shot.png (1568x980 PNG, 412 KB)`."""
        kind = self.extension.upper().replace("JPG", "JPEG")
        return f"{self.name} ({self.width}x{self.height} {kind}, {_size(self.bytes)})"

    def record(self) -> dict[str, Any]:
        """The JSON object the user event keeps."""
        return {"name": self.name, "sha256": self.sha256, "media_type": self.media_type,
                "width": self.width, "height": self.height, "bytes": self.bytes}

    @classmethod
    def from_record(cls, record: Any) -> ImageRef | None:
        """The reference a record holds, or None when it is not one (a damaged or foreign line:
        left out of what is rendered rather than failing the whole log)."""
        if not isinstance(record, dict):
            return None
        name, sha, media = record.get("name"), record.get("sha256"), record.get("media_type")
        numbers = [record.get(k) for k in ("width", "height", "bytes")]
        if not (isinstance(name, str) and isinstance(sha, str) and len(sha) == 64 and media in EXTENSIONS
                and all(type(n) is int and n >= 0 for n in numbers)):
            return None
        return cls(name, sha, media, *numbers)  # type: ignore[arg-type]


def image_refs(records: Any) -> list[ImageRef]:
    """The readable references among a user event's `images`."""
    found = [ImageRef.from_record(r) for r in records] if isinstance(records, list) else []
    return [ref for ref in found if ref is not None]


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.0f} KB"
    return f"{count / (1024 * 1024):.1f} MB"
