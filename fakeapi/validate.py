"""Request validation with the real Messages API's rules and error wording.

The point of the fake is to fail where the real API would fail, so an agent bug
(an unanswered tool_use, a fifth cache breakpoint, an empty text block) shows up
in tests instead of in production. Checks raise `InvalidRequest`; the server turns
it into a 400 `invalid_request_error` (or 401 for missing credentials).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .images import MAX_IMAGES, check_image
from .pairing import check_tool_pairing
from .problems import InvalidRequest

__all__ = ["MAX_CACHE_BREAKPOINTS", "InvalidRequest", "check_headers", "validate_request"]

MAX_CACHE_BREAKPOINTS = 4

# Body fields the SDK (2.14, plain and beta) can send, plus the sampling knobs the API
# still takes via extra_body. Anything else is a typo the real API would reject.
KNOWN_FIELDS = frozenset(
    {
        "model", "messages", "max_tokens", "system", "tools", "tool_choice", "stream", "metadata",
        "stop_sequences", "thinking", "service_tier", "container", "cache_control", "diagnostics",
        "inference_geo", "output_config", "output_format", "speed", "temperature", "top_p", "top_k",
        "mcp_servers", "context_management", "betas", "billing_policy", "compaction",
        "fallback_credit_token", "fallbacks", "thread",
    }
)  # fmt: skip
ROLES = ("user", "assistant", "system")
BLOCK_TYPES = ("text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking")
TOOL_RESULT_CONTENT_TYPES = ("text", "image", "document")
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def check_headers(headers: Mapping[str, str]) -> None:
    """Credentials and API version, as the SDK always sends them. Keys are lower-case."""
    if not headers.get("x-api-key") and not headers.get("authorization"):
        raise InvalidRequest("x-api-key header is required", status=401, error_type="authentication_error")
    if not headers.get("anthropic-version"):
        raise InvalidRequest("anthropic-version: header is required")


def validate_request(body: Any) -> None:
    """Raise `InvalidRequest` with the API's message if `body` would be rejected."""
    if not isinstance(body, dict):
        raise InvalidRequest("Request body must be a JSON object")
    for key in body:
        if key not in KNOWN_FIELDS:
            raise InvalidRequest(f"{key}: Extra inputs are not permitted")
    _check_scalars(body)
    breakpoints = _check_tools(body.get("tools"))
    _check_tool_choice(body.get("tool_choice"), body.get("tools") or [])
    breakpoints += _check_system(body.get("system"))
    breakpoints += _check_messages(body["messages"])
    _check_image_count(body["messages"])
    if body.get("cache_control") is not None:
        _check_cache_control(body["cache_control"], "cache_control")
        breakpoints += 1
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        raise InvalidRequest(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )
    check_tool_pairing(body["messages"])


def _check_scalars(body: dict[str, Any]) -> None:
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            raise InvalidRequest(f"{name}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise InvalidRequest("model: Input should be a valid string")
    max_tokens = body["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise InvalidRequest("max_tokens: Input should be a valid integer")
    if max_tokens < 0:
        # 0 is legal since the API learned cache pre-warming ("populate the cache
        # without generating a response").
        raise InvalidRequest("max_tokens: Input should be greater than or equal to 0")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise InvalidRequest("stream: Input should be a valid boolean")
    if not isinstance(body["messages"], list):
        raise InvalidRequest("messages: Input should be a valid list")
    if not body["messages"]:
        raise InvalidRequest("messages: at least one message is required")


def _check_cache_control(value: Any, path: str) -> None:
    if not isinstance(value, dict) or value.get("type") != "ephemeral":
        raise InvalidRequest(f"{path}.type: Input should be 'ephemeral'")
    if value.get("ttl", "5m") not in ("5m", "1h"):
        raise InvalidRequest(f"{path}.ttl: Input should be '5m' or '1h'")


def _marker(block: dict[str, Any], path: str) -> int:
    """1 if `block` carries a (valid) cache_control, else 0."""
    if block.get("cache_control") is None:
        return 0
    _check_cache_control(block["cache_control"], f"{path}.cache_control")
    return 1


def _check_text(block: dict[str, Any], path: str) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        raise InvalidRequest(f"{path}.text: Field required")
    if not text:
        raise InvalidRequest(f"{path}.text: text content blocks must be non-empty")


def _check_tools(tools: Any) -> int:
    if tools is None:
        return 0
    if not isinstance(tools, list):
        raise InvalidRequest("tools: Input should be a valid list")
    names: set[str] = set()
    count = 0
    for k, tool in enumerate(tools):
        path = f"tools.{k}"
        if not isinstance(tool, dict):
            raise InvalidRequest(f"{path}: Input should be a valid dictionary")
        name = tool.get("name")
        if not isinstance(name, str):
            raise InvalidRequest(f"{path}.name: Field required")
        if not _TOOL_NAME.match(name):
            raise InvalidRequest(f"{path}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        # Server tools (web_search_..., bash_...) are typed and bring their own schema.
        if tool.get("type") in (None, "custom"):
            schema = tool.get("input_schema")
            if schema is None:
                raise InvalidRequest(f"{path}.input_schema: Field required")
            if not isinstance(schema, dict):
                raise InvalidRequest(f"{path}.input_schema: Input should be a valid dictionary")
        if name in names:
            raise InvalidRequest("tools: Tool names must be unique.")
        names.add(name)
        count += _marker(tool, path)
    return count


TOOL_CHOICE_TYPES = ("auto", "any", "tool", "none")


def _check_tool_choice(choice: Any, tools: list[dict[str, Any]]) -> None:
    """As the API checks it: a known type; `tool` names one of the request's tools; `any` and
    `tool` need tools to choose from."""
    if choice is None:
        return
    if not isinstance(choice, dict) or choice.get("type") not in TOOL_CHOICE_TYPES:
        raise InvalidRequest("tool_choice: Input tag does not match any of the expected tags: "
                             + ", ".join(f"'{t}'" for t in TOOL_CHOICE_TYPES))
    if choice["type"] in ("any", "tool") and not tools:
        raise InvalidRequest("tool_choice: tool_choice may only be specified while providing tools.")
    if choice["type"] == "tool":
        name = choice.get("name")
        if not isinstance(name, str):
            raise InvalidRequest("tool_choice.tool.name: Field required")
        if name not in {t.get("name") for t in tools}:
            raise InvalidRequest(f"tool_choice.tool.name: Tool '{name}' not found in tools")


def _check_system(system: Any) -> int:
    if system is None or isinstance(system, str):
        return 0
    if not isinstance(system, list):
        raise InvalidRequest("system: Input should be a valid string or a list of text blocks")
    return _check_text_blocks(system, "system")


def _check_text_blocks(blocks: list[Any], where: str) -> int:
    """Text blocks only (a system prompt, a system message): their cache markers counted."""
    count = 0
    for j, block in enumerate(blocks):
        path = f"{where}.{j}"
        if not isinstance(block, dict) or block.get("type") != "text":
            raise InvalidRequest(f"{path}.type: Input should be 'text'")
        _check_text(block, path)
        count += _marker(block, path)
    return count


def _check_messages(messages: list[Any]) -> int:
    count = 0
    last = len(messages) - 1
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidRequest(f"messages.{i}: Input should be a valid dictionary")
        role = message.get("role")
        if role not in ROLES:
            raise InvalidRequest(f"messages.{i}.role: Input should be 'user', 'assistant' or 'system'")
        if i == 0 and role != "user":
            raise InvalidRequest('messages: first message must use the "user" role')
        content = message.get("content")
        if not isinstance(content, (str, list)):
            raise InvalidRequest(f"messages.{i}.content: Input should be a valid string or list")
        if not content and not (i == last and role == "assistant"):
            raise InvalidRequest(
                f"messages.{i}: all messages must have non-empty content except for the optional "
                "final assistant message"
            )
        if role == "system":
            count += _check_system_message(messages, i)
        elif isinstance(content, list):
            for j, block in enumerate(content):
                count += _check_block(block, role, f"messages.{i}.content.{j}")
    final = messages[last]
    if final.get("role") == "assistant":
        _check_prefill(final["content"])
    return count


def _check_system_message(messages: list[Any], i: int) -> int:
    """A mid-conversation system message, as the API places it: right after a user message (so
    never first, never two in a row, never between a tool_use and its tool_result) and followed
    by an assistant message or nothing; text only, as a string or text blocks that may carry
    cache_control. Returns its breakpoints."""
    if not isinstance(messages[i - 1], dict) or messages[i - 1].get("role") != "user":
        raise InvalidRequest(f"messages.{i}: role 'system' must follow a 'user' message")
    following = messages[i + 1] if i + 1 < len(messages) else None
    if following is not None and (not isinstance(following, dict) or following.get("role") != "assistant"):
        raise InvalidRequest(f"messages.{i}: role 'system' must precede an 'assistant' message or end the array")
    content = messages[i]["content"]
    if isinstance(content, str):
        return 0
    return _check_text_blocks(content, f"messages.{i}.content")


def _check_image_count(messages: list[dict[str, Any]]) -> None:
    count = 0
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict):
                count += block.get("type") == "image"
                inner = block.get("content") if block.get("type") == "tool_result" else None
                count += sum(isinstance(i, dict) and i.get("type") == "image"
                             for i in (inner if isinstance(inner, list) else []))
    if count > MAX_IMAGES:
        raise InvalidRequest(f"messages: Too many images in request: {count} > {MAX_IMAGES}")


def _check_prefill(content: str | list[Any]) -> None:
    text = content if isinstance(content, str) else ""
    if isinstance(content, list) and content and content[-1].get("type") == "text":
        text = content[-1].get("text", "")
    if text and text != text.rstrip():
        raise InvalidRequest("messages: final assistant content cannot end with trailing whitespace")


def _check_block(block: Any, role: str, path: str) -> int:
    if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
        tag = block.get("type") if isinstance(block, dict) else None
        expected = ", ".join(f"'{t}'" for t in BLOCK_TYPES)
        raise InvalidRequest(
            f"{path}.type: Input tag '{tag}' found using 'type' does not match any of the expected tags: {expected}"
        )
    kind = block["type"]
    if kind == "text":
        _check_text(block, path)
    elif kind == "image":
        check_image(block, path)
    elif kind == "document" and not isinstance(block.get("source"), dict):
        raise InvalidRequest(f"{path}.source: Field required")
    elif kind == "tool_use":
        if role != "assistant":
            raise InvalidRequest(f"{path}: `tool_use` blocks can only be in `assistant` messages")
        if not isinstance(block.get("id"), str) or not _TOOL_ID.match(block["id"]):
            raise InvalidRequest(f"{path}.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        if not isinstance(block.get("name"), str):
            raise InvalidRequest(f"{path}.name: Field required")
        if not isinstance(block.get("input"), dict):
            raise InvalidRequest(f"{path}.input: Input should be a valid dictionary")
    elif kind == "tool_result":
        return _check_tool_result(block, role, path)
    elif kind == "thinking" and not isinstance(block.get("thinking"), str):
        raise InvalidRequest(f"{path}.thinking: Field required")
    return _marker(block, path)


def _check_tool_result(block: dict[str, Any], role: str, path: str) -> int:
    if role != "user":
        raise InvalidRequest(f"{path}: `tool_result` blocks can only be in `user` messages")
    if not isinstance(block.get("tool_use_id"), str):
        raise InvalidRequest(f"{path}.tool_use_id: Field required")
    if "is_error" in block and not isinstance(block["is_error"], bool):
        raise InvalidRequest(f"{path}.is_error: Input should be a valid boolean")
    content = block.get("content", "")
    count = _marker(block, path)
    if isinstance(content, list):
        for k, item in enumerate(content):
            sub = f"{path}.content.{k}"
            if not isinstance(item, dict) or item.get("type") not in TOOL_RESULT_CONTENT_TYPES:
                raise InvalidRequest(f"{sub}.type: Input should be 'text', 'image' or 'document'")
            if item["type"] == "text":
                _check_text(item, sub)
            elif item["type"] == "image":
                check_image(item, sub)
            count += _marker(item, sub)
    elif not isinstance(content, str):
        raise InvalidRequest(f"{path}.content: Input should be a valid string or list")
    return count
