"""The images of a session, kept beside its log: `<state>/sessions/<id>/images/<sha256>.<ext>`.

Content-addressed (the file name is the sha256 of its bytes), so the same picture attached twice
is stored once and a file cannot be swapped for another without the swap showing; private like
the log (0600 files in 0700 folders). The user event records the reference (log/images.py);
render reads the bytes back through `base64`, so `scribe log prompt --at` rebuilds a request that
held an image byte for byte while the store still has it. A file that is gone or no longer
matches its name is missing: `base64` says None and the caller decides (the agent sends a fixed
line in its place; `scribe log prompt` refuses in one line, see `StrictImages`).
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from pathlib import Path

from .images import EXTENSIONS, ImageRef
from .jsonl import LogError, LogWriteError
from .private import make_private_folder, open_private

IMAGES = "images"


class ImageMissing(LogError):
    """An image a request held is no longer in the session's image store, whole."""


class ImageStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._encoded: dict[str, str] = {}  # sha256 -> base64, read once per process

    @classmethod
    def for_log(cls, log_path: Path) -> ImageStore:
        """The store of the session whose log is `log_path` (`<id>.jsonl` -> `<id>/images/`)."""
        return cls(log_path.with_suffix("") / IMAGES)

    def path(self, ref: ImageRef) -> Path:
        return self.folder / ref.file_name

    def put(self, data: bytes, media_type: str) -> str:
        """Keep `data`; its sha256. Written to a temporary file, flushed and renamed into place, so
        the store never holds half an image under a whole one's name. Raises LogWriteError."""
        if media_type not in EXTENSIONS:
            raise ValueError(f"not an image type the API takes: {media_type}")
        digest = hashlib.sha256(data).hexdigest()
        target = self.folder / f"{digest}.{EXTENSIONS[media_type]}"
        if self._whole(target, digest):
            return digest
        temporary = self.folder / f".{digest}.{secrets.token_hex(4)}.tmp"
        try:
            make_private_folder(self.folder)
            fd = open_private(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise LogWriteError(f"cannot keep the image in {self.folder}: {exc.strerror or exc}") from None
        return digest

    def read(self, ref: ImageRef) -> bytes | None:
        """The image's bytes, or None when the file is gone, unreadable or not what it was."""
        try:
            data = self.path(ref).read_bytes()
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == ref.sha256 else None

    def base64(self, ref: ImageRef) -> str | None:
        """The image as the API takes it (base64 text), or None when it is missing."""
        found = self._encoded.get(ref.sha256)
        if found is None:
            data = self.read(ref)
            if data is None:
                return None
            found = self._encoded[ref.sha256] = base64.b64encode(data).decode("ascii")
        return found

    @staticmethod
    def _whole(target: Path, digest: str) -> bool:
        try:
            return hashlib.sha256(target.read_bytes()).hexdigest() == digest
        except OSError:
            return False


class StrictImages:
    """An image source for rebuilding a request exactly: a missing image is an error naming it,
    never a stand-in (`scribe log prompt`)."""

    def __init__(self, store: ImageStore) -> None:
        self.store = store

    def base64(self, ref: ImageRef) -> str | None:
        found = self.store.base64(ref)
        if found is None:
            raise ImageMissing(f"the image {ref.name} (sha256 {ref.sha256[:12]}…) is missing from "
                               f"{self.store.folder}; a request that held it cannot be rebuilt byte for byte")
        return found
