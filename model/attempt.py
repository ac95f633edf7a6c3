"""One try of a streamed model call, read in a thread of its own.

The SDK blocks while it connects and while it waits for the next byte, and a generator cannot
say anything meanwhile. So the stream is read in a worker thread that hands each piece over a
queue; the caller waits on the queue with a timeout and can tell its front ends at once that
the server has gone quiet. A Ctrl-C lands in the caller's thread, which stops waiting at once;
the worker notices at its next piece (or its read timeout) and closes the stream.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from .complete import check_unicode, complete_message, unreadable

# Anthropic's API sends this header with every answer (and a proxy in front of it passes it
# on); a server of its own (llama.cpp, Ollama, vLLM) does not.
ANTHROPIC_HEADER = "anthropic-organization-id"


@dataclass(frozen=True)
class Began:
    """The server answered 200; the body follows. `anthropic`: with Anthropic's own header."""

    content_type: str
    anthropic: bool = False


@dataclass(frozen=True)
class Answering:
    """The answer's first event came: the server has read the prompt and is writing. (A local
    server sends its 200 at once and nothing more while it evaluates a long prompt.)"""


@dataclass(frozen=True)
class Piece:
    text: str


@dataclass(frozen=True)
class Done:
    message: Any  # the SDK's Message, complete (answer.complete_message)
    # What the server's stream left out of its usage, counted as zero: "input" (message_start's
    # counts), "output" (message_delta's); empty for a whole answer.
    usage_missing: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Broke:
    error: BaseException


Step = Began | Answering | Piece | Done | Broke

# What the SDK raises while reading a 200 whose body is not what it expects: it parses without
# validating, so a malformed answer can surface as any of these. A body that fails to arrive or
# to decompress is the SDK's public APIConnectionError (client.py retries it).
UNREADABLE = (ValueError, LookupError, TypeError, AttributeError, RuntimeError, AssertionError)


class Attempt:
    def __init__(self, open_stream: Callable[[], AbstractContextManager[Any]]) -> None:
        self._open = open_stream
        self._steps: queue.Queue[Step] = queue.Queue()
        self._abandoned = threading.Event()
        self._thread = threading.Thread(target=self._read, name="scribe-model-call", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def next(self, timeout: float | None) -> Step | None:
        """The next step, or None if nothing came within `timeout` seconds."""
        try:
            return self._steps.get(timeout=timeout)
        except queue.Empty:
            return None

    def abandon(self) -> None:
        """The caller has stopped listening: the worker closes the stream at its next piece."""
        self._abandoned.set()

    def _read(self) -> None:
        try:
            manager = self._open()
            with manager as stream:
                content_type = stream.response.headers.get("content-type", "")
                self._steps.put(Began(content_type, ANTHROPIC_HEADER in stream.response.headers))
                try:
                    message = self._events(stream)
                except UNREADABLE as exc:
                    raise unreadable(exc, content_type) from exc
                if message is not None:
                    self._steps.put(Done(message, getattr(manager, "usage_missing", frozenset())))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, which raises it
            self._steps.put(Broke(exc))

    def _events(self, stream: Any) -> Any:
        started = stopped = False
        for event in stream:
            if self._abandoned.is_set():
                return None
            if not started:
                self._steps.put(Answering())
            if event.type == "message_start":
                started = True
            elif event.type == "message_stop":
                stopped = True
            elif event.type == "text" and event.text:
                check_unicode(event.text)
                self._steps.put(Piece(event.text))
        message = stream.current_message_snapshot if started else None
        return complete_message(message, stopped, stream.response.headers.get("content-type", ""))


class UsageFilled:
    """A raw event stream whose missing usage is filled with zeros before the SDK sees it.

    A server or proxy may leave `usage` out of `message_start` and `message_delta` (or send it
    as null); the SDK's accumulator then fails on the first `message_delta`, and every retry
    fails the same way. The counts are unknown, not absent: they are read as zero, and
    `usage_missing` says which, so the person can be told once.

    llama.cpp's server leaves `message_start` itself out when the answer's first token is only
    part of a character (an emoji the model writes in two tokens): the stream opens with
    `content_block_start` and is otherwise whole. A start is supplied (with `model` and zero
    counts, `usage_missing` "start"); a stream with no events at all is still an empty answer."""

    def __init__(self, raw: Any, model: str = "") -> None:
        self._raw = raw
        self._model = model
        self.usage_missing: set[str] = set()

    @property
    def response(self) -> Any:
        return self._raw.response

    def close(self) -> None:
        self._raw.close()

    def __iter__(self) -> Any:
        from anthropic.types import MessageDeltaUsage, Usage  # noqa: PLC0415 - with the SDK, already loaded

        started = False
        for event in self._raw:
            if not started and event.type != "message_start":
                self.usage_missing.add("start")
                yield _supplied_start(self._model)
            started = True
            if event.type == "message_start" and _lacks_counts(getattr(event.message, "usage", None)):
                self.usage_missing.add("input")
                event.message.usage = Usage(input_tokens=0, output_tokens=0)
            elif event.type == "message_delta" and _lacks_counts(getattr(event, "usage", None)):
                self.usage_missing.add("output")
                event.usage = MessageDeltaUsage(output_tokens=0)
            yield event


def _supplied_start(model: str) -> Any:
    from anthropic.types import Message, RawMessageStartEvent, Usage  # noqa: PLC0415 - with the SDK

    message = Message(id="", type="message", role="assistant", content=[], model=model, stop_reason=None,
                      stop_sequence=None, usage=Usage(input_tokens=0, output_tokens=0))
    return RawMessageStartEvent(type="message_start", message=message)


def _lacks_counts(usage: Any) -> bool:
    return usage is None or getattr(usage, "output_tokens", None) is None


class FilledMessageStream:
    """What `client.messages.stream(...)` makes, the SDK's own MessageStream, built over a
    UsageFilled raw stream from the public `create(stream=True)` call."""

    def __init__(self, open_raw: Callable[[], Any], model: str = "") -> None:
        self._open_raw = open_raw
        self._model = model
        self._raw: UsageFilled | None = None
        self._stream: Any = None

    @property
    def usage_missing(self) -> frozenset[str]:
        return frozenset(self._raw.usage_missing) if self._raw is not None else frozenset()

    def __enter__(self) -> Any:
        from anthropic import NOT_GIVEN  # noqa: PLC0415 - with the SDK, already loaded
        from anthropic.lib.streaming import MessageStream  # noqa: PLC0415

        self._raw = UsageFilled(self._open_raw(), self._model)
        self._stream = MessageStream(self._raw, output_format=NOT_GIVEN)  # type: ignore[arg-type]
        return self._stream

    def __exit__(self, *exc: object) -> None:
        if self._stream is not None:
            self._stream.close()
