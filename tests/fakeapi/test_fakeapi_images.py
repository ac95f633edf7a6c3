"""The fake API takes image blocks as the real one does, and bills them by their pixels."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image

from scribe.fakeapi.tokens import block_tokens
from scribe.fakeapi.validate import InvalidRequest, validate_request


def png(width: int = 300, height: int = 200) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def image(data: bytes | str, media: str = "image/png") -> dict[str, Any]:
    encoded = data if isinstance(data, str) else base64.b64encode(data).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": encoded}}


def body(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10,
            "messages": [{"role": "user", "content": [*blocks, {"type": "text", "text": "what is this?"}]}]}


def test_a_whole_image_of_the_type_it_names_is_taken_and_billed_by_its_pixels() -> None:
    validate_request(body(image(png())))
    assert block_tokens(image(png(1000, 750))) == 1000  # 750,000 pixels / 750
    jpeg = io.BytesIO()
    Image.new("RGB", (10, 10)).save(jpeg, "JPEG")
    validate_request(body(image(jpeg.getvalue(), "image/jpeg")))


@pytest.mark.parametrize(("block", "message"), [
    (image(png(), "image/bmp"), "media_type: Input should be 'image/jpeg'"),
    (image(png(), "image/jpeg"), "Image does not match the provided media type image/jpeg"),
    (image("not base64 at all!"), "invalid base64 data"),
    (image(b"\x89PNG\r\n\x1a\n but the rest is not a PNG"), "Could not process image"),
    (image("A" * (5 * 1024 * 1024 + 4)), "image exceeds 5 MB maximum: 5242884 bytes > 5242880 bytes"),
    (image(png(8001, 10)), "At least one of the image dimensions exceed max allowed size: 8000 pixels"),
    ({"type": "image"}, "source: Field required"),
])
def test_a_bad_image_is_refused_with_the_apis_words(block: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        validate_request(body(block))
    assert message in str(refused.value)
    assert str(refused.value).startswith("messages.0.content.0.")


def test_an_image_inside_a_tool_result_is_checked_too() -> None:
    request = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "draw"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "chart", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "a chart"}, image(png(), "image/gif")]}]},
    ]}
    with pytest.raises(InvalidRequest, match="Image does not match the provided media type image/gif"):
        validate_request(request)


def test_an_mcp_image_is_sent_only_when_the_api_would_take_it() -> None:
    from scribe.tools.mcp.content import result_parts

    big = base64.b64encode(b"\x89PNG" + b"\0" * (4 * 1024 * 1024)).decode()  # 4 MB: 5.3 MB of base64
    parts = result_parts({"content": [{"type": "image", "mimeType": "image/png", "data": big}]}, 10_000)
    assert parts.blocks == [] and "too large to show (the API takes up to 5 MB of base64)" in parts.text
    small = base64.b64encode(png()).decode()
    assert result_parts({"content": [{"type": "image", "mimeType": "image/png", "data": small}]}, 10_000).blocks
