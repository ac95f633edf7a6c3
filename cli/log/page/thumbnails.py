"""The images attached to a session's messages, as the page shows them: a small thumbnail of
each, inline as a data: URI (the page fetches nothing), made from the session's image store
with Pillow, which is imported only for a session that has images. An image the store no
longer has is named in a line instead."""

from __future__ import annotations

import base64
import io
from html import escape

from scribe.log.attachments import ImageStore
from scribe.log.images import ImageRef

from .text import inline

THUMBNAIL_SIDE = 240


class Thumbnails:
    def __init__(self, store: ImageStore | None) -> None:
        self.store = store
        self._made: dict[str, str | None] = {}

    def figure(self, ref: ImageRef) -> str:
        """A thumbnail with its caption, or the line saying the image is missing."""
        uri = self._uri(ref)
        caption = inline(ref.describe())
        if uri is None:
            return f'<p class="dim image-missing">image {caption}: not in the session\'s image store</p>'
        return (f'<figure class="thumb"><img src="{uri}" alt="{escape(ref.name, quote=True)}" loading="lazy">'
                f'<figcaption>{caption}</figcaption></figure>')

    def _uri(self, ref: ImageRef) -> str | None:
        if ref.sha256 not in self._made:
            data = self.store.read(ref) if self.store is not None else None
            self._made[ref.sha256] = _thumbnail(data) if data is not None else None
        return self._made[ref.sha256]


def _thumbnail(data: bytes) -> str | None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
            out = io.BytesIO()
            image.convert("RGB").save(out, "JPEG", quality=80)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError):
        return None
    return "data:image/jpeg;base64," + base64.b64encode(out.getvalue()).decode("ascii")
