"""`scribe run --input-format stream-json`: a multi-turn session over stdin, one JSON object a
line, in Claude Code's shapes wherever they fit (docs/usage.md lists them):

    {"type":"user","message":{"role":"user","content":"..."}}        a message (content: text, or
                                                                      text and image blocks)
    {"type":"control_request","request_id":ID,"request":{"subtype":"interrupt"}}
                                                                      cancel what runs now
    {"type":"control_request",...,"request":{"subtype":"set_permission_mode","mode":M}}
    {"type":"control_request",...,"request":{"subtype":"set_model","model":M}}
    {"type":"control_request",...,"request":{"subtype":"accept_plan","mode":M}}   (scribe's own)
    {"type":"control_request",...,"request":{"subtype":"compact","focus":"..."}}   (scribe's own)
    {"type":"control_request",...,"request":{"subtype":"end"}}        (scribe's own; so is EOF)
    {"type":"control_response","response":{"subtype":"success","request_id":ID,
        "response":{"behavior":"allow"|"deny","message":"..."}}}       an approval's answer

A line that is not one of these gets one `system`/`notice` line back saying why, and is
otherwise ignored: a wrapper's typo never ends the session. `parse` is pure; `read` feeds a
running agent from a stream in a thread of its own.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from scribe.agent.protocol import (
    AcceptPlan,
    ApprovalAnswer,
    Cancel,
    Compact,
    Decision,
    End,
    SetMode,
    Submission,
    SwitchModel,
    UserMessage,
)
from scribe.settings.values import PERMISSION_MODES, PermissionMode

# Claude Code's names for the permission modes, beside scribe's own.
MODES = {"default": PermissionMode.ASK, "acceptEdits": PermissionMode.ACCEPT_EDITS,
         "bypassPermissions": PermissionMode.FULL_AUTO, "readOnly": PermissionMode.READ_ONLY,
         **{m: PermissionMode(m) for m in PERMISSION_MODES}}


@dataclass(frozen=True)
class Parsed:
    """What one line asks for: a submission, and the control_response it is owed (None: none),
    or why it was not understood."""

    submission: Submission | None = None
    reply_to: str | None = None
    problem: str | None = None


class Unreadable(ValueError):
    """A line that is not one of the shapes above; the message says why."""


def parse(line: str) -> Parsed:
    """One line of input. Blank lines are nothing."""
    if not line.strip():
        return Parsed()
    try:
        record = json.loads(line)
        if not isinstance(record, dict):
            raise Unreadable("each line must be one JSON object")
        return _parsed(record)
    except json.JSONDecodeError as exc:
        return Parsed(problem=f"not JSON ({exc.msg} at column {exc.colno})")
    except Unreadable as exc:
        return Parsed(problem=str(exc))


def _parsed(record: dict[str, Any]) -> Parsed:
    kind = record.get("type")
    if kind == "user":
        message = record.get("message")
        if not isinstance(message, dict):
            raise Unreadable('a "user" line needs a "message" object')
        return Parsed(_message(message.get("content")))
    if kind == "control_request":
        request = record.get("request")
        request_id = record.get("request_id")
        if not isinstance(request, dict):
            raise Unreadable('a "control_request" needs a "request" object')
        return Parsed(_control(request), reply_to=str(request_id) if request_id is not None else None)
    if kind == "control_response":
        return Parsed(_approval(record.get("response")))
    raise Unreadable(f"unknown line type {kind!r} (expected user, control_request or control_response)")


def _message(content: Any) -> UserMessage:
    if isinstance(content, str):
        if not content.strip():
            raise Unreadable("the message is empty")
        return UserMessage(content)
    if not isinstance(content, list):
        raise Unreadable('"content" must be a string or a list of blocks')
    texts: list[str] = []
    images = []
    for block in content:
        if not isinstance(block, dict):
            raise Unreadable("each content block must be an object")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "image":
            images.append(_image(block))
        else:
            raise Unreadable(f"content blocks may be text or image, not {block.get('type')!r}")
    text = "\n\n".join(texts)
    if not text.strip() and not images:
        raise Unreadable("the message is empty")
    return UserMessage(text, tuple(images))


def _image(block: dict[str, Any]) -> Any:
    from scribe.workspace.images import ImageRefused, prepare_image

    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64" or not isinstance(source.get("data"), str):
        raise Unreadable('an image block needs a base64 "source" (type, media_type, data)')
    try:
        data = base64.b64decode(source["data"], validate=True)
    except (binascii.Error, ValueError):
        raise Unreadable("an image block's data is not base64") from None
    try:
        return prepare_image("stdin", data)
    except ImageRefused as exc:
        raise Unreadable(str(exc)) from None


def _control(request: dict[str, Any]) -> Submission:
    subtype = request.get("subtype")
    if subtype == "interrupt":
        return Cancel()
    if subtype == "set_permission_mode":
        mode = MODES.get(str(request.get("mode")))
        if mode is None:
            raise Unreadable(f"unknown permission mode {request.get('mode')!r} (one of {', '.join(MODES)})")
        return SetMode(mode)
    if subtype == "set_model":
        model = request.get("model")
        if not isinstance(model, str) or not model:
            raise Unreadable('set_model needs a "model"')
        return SwitchModel(model)
    if subtype == "accept_plan":
        mode = MODES.get(str(request.get("mode", "acceptEdits")))
        if mode is None:
            raise Unreadable(f"unknown permission mode {request.get('mode')!r} (one of {', '.join(MODES)})")
        remark = request.get("remark", "")
        return AcceptPlan(mode, remark if isinstance(remark, str) else "")
    if subtype == "compact":
        focus = request.get("focus", "")
        return Compact(focus if isinstance(focus, str) else "")
    if subtype == "end":
        return End()
    raise Unreadable(f"unknown control request {subtype!r} (interrupt, set_permission_mode, set_model, accept_plan, "
                     "compact, end)")


def _approval(response: Any) -> ApprovalAnswer:
    if not isinstance(response, dict) or not isinstance(response.get("request_id"), str):
        raise Unreadable('a "control_response" needs a "response" with the "request_id" it answers')
    given = response.get("response")
    answer: dict[str, Any] = given if isinstance(given, dict) else {}
    if response.get("subtype") == "error":
        return ApprovalAnswer(response["request_id"], Decision.DECLINE, str(response.get("error", "")))
    behavior = answer.get("behavior")
    decisions = {"allow": Decision.ALLOW, "allow_always": Decision.ALLOW_ALWAYS, "deny": Decision.DECLINE,
                 "stop": Decision.STOP}
    if behavior not in decisions:
        raise Unreadable(f"an approval's behavior is allow, allow_always, deny or stop, not {behavior!r}")
    return ApprovalAnswer(response["request_id"], decisions[behavior], str(answer.get("message", "")))


def read(stream: IO[str], submit: Callable[[Submission], None], reply: Callable[[dict[str, Any]], None],
         ended: threading.Event) -> threading.Thread:
    """Feed `submit` from `stream` in a thread of its own, answering control requests through
    `reply`; End at the end of the stream (or when `ended` is set by the other side)."""

    def feed() -> None:
        try:
            for line in stream:
                if ended.is_set():
                    return
                parsed = parse(line)
                if parsed.problem is not None:
                    reply({"type": "system", "subtype": "notice", "error": True,
                           "text": f"input line not understood: {parsed.problem}"})
                    continue
                if parsed.submission is None:
                    continue
                submit(parsed.submission)
                if parsed.reply_to is not None:
                    reply({"type": "control_response", "response": {"subtype": "success",
                                                                    "request_id": parsed.reply_to}})
                if isinstance(parsed.submission, End):
                    return
        except (OSError, ValueError):
            pass  # stdin closed under us: the same as its end
        submit(End())

    thread = threading.Thread(target=feed, name="scribe-stdin", daemon=True)
    thread.start()
    return thread
