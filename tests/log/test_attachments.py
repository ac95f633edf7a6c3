"""log/attachments.py: a session's images, content-addressed and private beside its log."""

from __future__ import annotations

import base64
import hashlib
import stat
from pathlib import Path

import pytest

from scribe.log.attachments import ImageMissing, ImageStore, StrictImages
from scribe.log.images import ImageRef, image_refs

PNG = b"\x89PNG\r\n\x1a\n" + b"not really, but bytes all the same"


def ref_of(data: bytes, name: str = "shot.png") -> ImageRef:
    return ImageRef(name, hashlib.sha256(data).hexdigest(), "image/png", 10, 10, len(data))


def test_an_image_is_kept_once_by_its_hash_private_beside_the_log(tmp_path: Path) -> None:
    store = ImageStore.for_log(tmp_path / "sessions" / "20260101-000000-abcdef.jsonl")
    assert store.folder == tmp_path / "sessions" / "20260101-000000-abcdef" / "images"
    digest = store.put(PNG, "image/png")
    assert digest == hashlib.sha256(PNG).hexdigest() and store.put(PNG, "image/png") == digest
    [kept] = list(store.folder.iterdir())
    assert kept.name == f"{digest}.png" and kept.read_bytes() == PNG
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(store.folder.stat().st_mode) == 0o700
    assert store.base64(ref_of(PNG)) == base64.b64encode(PNG).decode()


def test_a_missing_or_changed_image_is_missing_and_strict_reading_names_it(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "images")
    store.put(PNG, "image/png")
    ref = ref_of(PNG)
    store.path(ref).write_bytes(b"swapped")  # no longer what its name says
    assert ImageStore(store.folder).base64(ref) is None
    store.path(ref).unlink()
    assert ImageStore(store.folder).read(ref) is None
    with pytest.raises(ImageMissing, match=r"the image shot\.png \(sha256 [0-9a-f]{12}…\) is missing from"):
        StrictImages(ImageStore(store.folder)).base64(ref)


def test_a_record_that_is_not_an_image_reference_is_left_out() -> None:
    good = ref_of(PNG).record()
    assert image_refs([good, {"name": "x"}, "junk", {**good, "media_type": "image/bmp"}]) == [ref_of(PNG)]
    assert image_refs("not a list") == []
    assert ImageRef("a.png", "0" * 64, "image/png", 1000, 750, 1).tokens == 1000
