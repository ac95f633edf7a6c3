"""What counts as a complete answer from the Messages API, and what to call one that is not.

The SDK's `MessageStream` accumulates whatever arrives and calls it final when the body ends:
a stream cut cleanly after some text, or one that never sent `message_stop`, comes back as a
message with a `stop_reason` of null or of "end_turn". Only the API can say an answer is
complete: a `message_start`, then `message_stop`, with a stop reason. Anything else is a broken
answer, and each kind says whether trying the call again can help.
"""

from __future__ import annotations

import json
from typing import Any


class BrokenAnswer(Exception):
    """A 200 whose body is not a complete, readable answer. The message is one line."""

    retry = True  # the call is redone whole


class IncompleteAnswer(BrokenAnswer):
    """The stream ended before the API said the answer was complete."""


class MalformedAnswer(BrokenAnswer):
    """The stream held something no Messages API server sends: bad JSON, bytes that are not
    UTF-8, text that is not valid Unicode. Corruption on the way is the likely cause."""


class NotAStream(BrokenAnswer):
    """The 200 was not an event stream at all (a web page, plain JSON): the same address will
    answer the same way, so it is not retried."""

    retry = False


def not_a_stream(content_type: str) -> NotAStream | None:
    """The problem with a 200 of this content type, or None if it is an event stream."""
    kind = content_type.split(";")[0].strip().lower()
    if kind in ("text/event-stream", ""):
        return None  # a missing content type is judged by what the body held
    what = {"text/html": "an HTML page", "application/json": "plain JSON"}.get(kind, f"{kind!r}")
    return NotAStream(f"the server answered with {what}, not a Messages API event stream "
                      "(check ANTHROPIC_BASE_URL and any proxy in between)")


def complete_message(message: Any, stopped: bool, content_type: str) -> Any:
    """The message, if the stream made a complete answer of it; else raise why not."""
    if message is None:
        raise not_a_stream(content_type) or IncompleteAnswer("the server's answer was empty (no message_start)")
    if not stopped:
        raise IncompleteAnswer("the answer was cut short (the stream ended without message_stop)")
    if message.stop_reason is None:
        raise IncompleteAnswer("the answer was cut short (no stop reason)")
    for block in message.content:
        if block.type == "tool_use":
            check_unicode(json.dumps(block.input, ensure_ascii=False))
    return message


def check_unicode(text: str) -> None:
    """Text that cannot be written as UTF-8 (a lone surrogate, which JSON's \\ud800 escape can
    carry) would fail later, on the terminal, in the log or in the next request."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedAnswer("the answer holds text that is not valid Unicode (a lone surrogate)") from None


def unreadable(exc: Exception, content_type: str) -> BrokenAnswer:
    """What an error the SDK raised while reading a 200's body means."""
    problem = not_a_stream(content_type)
    if problem is not None:
        return problem
    if isinstance(exc, UnicodeDecodeError):
        return MalformedAnswer("the server sent bytes that are not UTF-8")
    if isinstance(exc, UnicodeEncodeError):
        return MalformedAnswer("the answer holds text that is not valid Unicode (a lone surrogate)")
    if isinstance(exc, json.JSONDecodeError):
        return MalformedAnswer(f"the server sent an event that is not valid JSON ({exc.msg})")
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return MalformedAnswer(f"the server sent an answer that cannot be read ({type(exc).__name__}"
                           f"{': ' + first if first else ''})")
