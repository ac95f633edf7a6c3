"""`FakeMessagesServer`: a loopback Anthropic Messages API for tests, benchmarks and demos.

Each POST /v1/messages is recorded, validated like the real API, answered with
the next scripted `Reply` or `Fault`, and billed against a per-instance prompt
cache. The real SDK talks to it over HTTP, so retries, streaming and error
mapping are exercised exactly as in production.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from .cache import PromptCache, flatten_request
from .faults import STREAM_FAULTS, shape_stream
from .problems import InvalidRequest
from .script import Fault, Reply, Responder, Script, ScriptItem
from .transport import ExchangeHandler, MessagesHTTPServer
from .validate import check_headers, validate_request
from .wire import (
    UsageHabit,
    error_body,
    message_json,
    output_tokens,
    stream_events,
    with_usage_habit,
    within_max_tokens,
)

__all__ = ["CUT_FILLER_TEXT", "NO_RESPONSE", "FakeMessagesServer", "RecordedRequest"]

NO_RESPONSE = 0  # RecordedRequest.status of a dropped connection
CUT_FILLER_TEXT = "This reply is cut off by the fake server before it can finish streaming."
_RETRYABLE = {408, 409, 429}
SERVER_KINDS = ("anthropic", "llama.cpp")
FAKE_ORGANIZATION = "00000000-0000-4000-8000-00000000fa4e"


@dataclass
class RecordedRequest:
    """One POST as received, and what it was answered."""

    body: bytes
    json: dict[str, Any]
    headers: dict[str, str]  # lower-case names
    status: int = NO_RESPONSE
    usage: dict[str, Any] | None = None
    error: str | None = None
    reply: ScriptItem | None = None


class FakeMessagesServer:
    """Serves scripted replies to the real `anthropic` SDK over loopback HTTP."""

    def __init__(
        self,
        script: Sequence[ScriptItem] | Responder | None = None,
        *,
        cache_min_tokens: int = 1024,
        ttl_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        host: str = "127.0.0.1",
        port: int = 0,
        usage: UsageHabit = "full",
        context_window: int | None = None,
        kind: str = "anthropic",
        answers_props: bool = True,
        template_tools: bool = True,
    ) -> None:
        """`context_window`: refuse a request whose prompt holds more tokens, as `kind` does: an
        "anthropic" server says "prompt is too long: N tokens > W maximum"; a "llama.cpp" one
        says "request (N tokens) exceeds the available context size (W tokens)" in its own error
        body, and answers GET /props with its window (default_generation_settings.n_ctx) unless
        `answers_props` is false (as behind a proxy that passes only /v1/messages).
        `template_tools` false: a "llama.cpp" server whose model's chat template has no tools,
        as SmolLM2's: /props says so (`chat_template_caps.supports_tools`), and the script sees
        each request without its `tools` and `tool_choice`, as that model would; its prompt is
        counted (usage, the window, the cache) without them, as that server counts it."""
        if kind not in SERVER_KINDS:
            raise ValueError(f"kind must be one of {', '.join(SERVER_KINDS)}")
        self.context_window = context_window
        self.kind = kind
        self.answers_props = answers_props
        self.template_tools = template_tools
        self._script = Script(script)
        self._usage_habit = usage
        self._cache = PromptCache(min_tokens=cache_min_tokens, ttl_s=ttl_s)
        self._clock = clock
        self._offset = 0.0
        self._address = (host, port)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: MessagesHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # Set by stop(): releases handlers that hang on purpose (Fault kinds "hang", "stall" and "slow_start").
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self.base_url = ""

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> str:
        """Bind, serve in a daemon thread, and return the base URL for the SDK."""
        if self._httpd is not None:
            return self.base_url
        self._stopping.clear()
        self._httpd = MessagesHTTPServer(self._address, self._dispatch, self._answer_get)
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        self.base_url = f"http://{host}:{port}"
        # A short poll interval keeps stop() fast; the default would add up to 0.5 s per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fakeapi", daemon=True
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.close_all()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- inspection and time ---------------------------------------------------

    def now(self) -> float:
        """The cache's notion of time: the injected clock plus any `advance`."""
        with self._lock:
            return self._clock() + self._offset

    def advance(self, seconds: float) -> None:
        """Age the cache by `seconds` without sleeping."""
        with self._lock:
            self._offset += seconds

    def cache_stats(self) -> dict[str, int]:
        """{"entries": live entries, "reads": requests that hit, "writes": entries created}."""
        return self._cache.stats(self.now())

    @property
    def errors(self) -> list[BaseException]:
        """Unexpected exceptions inside request handlers (should stay empty)."""
        return list(self._httpd.errors) if self._httpd is not None else []

    @property
    def remaining(self) -> int:
        """Script items not yet consumed."""
        return self._script.remaining

    # -- request handling ------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_01fake{next(self._ids):014d}"

    def _record(self, record: RecordedRequest) -> None:
        # Appended before any response byte is sent, so a caller that has its
        # answer always finds the request already recorded.
        with self._lock:
            self.requests.append(record)

    def _dispatch(self, handler: ExchangeHandler) -> None:
        body = handler.read_body()
        headers = {name.lower(): value for name, value in handler.headers.items()}
        record = RecordedRequest(body=body, json={}, headers=headers)
        request_id = self._new_id("req")
        try:
            if urlsplit(handler.path).path != "/v1/messages":
                raise InvalidRequest(f"Not Found: {handler.path}", status=404, error_type="not_found_error")
            check_headers(headers)
            try:
                parsed = json.loads(body)
            except ValueError:
                raise InvalidRequest("There was an error parsing the body of your request as JSON") from None
            if isinstance(parsed, dict):
                record.json = parsed
            validate_request(parsed)
        except InvalidRequest as exc:
            self._reject(handler, record, request_id, exc.status, exc.error_type, exc.message)
            return
        seen = parsed
        if self.kind == "llama.cpp" and not self.template_tools:
            # The template drops them: the model never sees them, and the server counts no token of them.
            seen = {k: v for k, v in parsed.items() if k not in ("tools", "tool_choice")}
        if self._too_long(handler, record, request_id, seen):
            return

        if parsed["max_tokens"] == 0:
            # Cache pre-warming: the prompt is processed but nothing is generated,
            # so no scripted reply is spent on it.
            item: ScriptItem = Reply([], stop_reason="max_tokens")
        else:
            try:
                item = self._script.next_item(seen)
            except Exception as exc:  # noqa: BLE001 - a responder bug must surface, not hang the SDK
                message = f"fake server responder raised {exc!r}"
                self._reject(handler, record, request_id, 500, "api_error", message, retryable=False)
                return
        record.reply = item
        if isinstance(item, Fault):
            if item.kind == "status":
                self._answer_fault(handler, record, request_id, item)
                return
            if item.kind == "drop":
                self._record(record)
                handler.hang_up()
                return
            if item.kind == "hang":
                self._record(record)
                self._hold(item)
                handler.hang_up()
                return
            if item.kind == "body":
                record.status = 200
                self._record(record)
                handler.send_raw(200, item.content_type, item.body, {"request-id": request_id})
                return
        self._answer_reply(handler, record, request_id, item, seen)

    def _too_long(self, handler: ExchangeHandler, record: RecordedRequest, request_id: str,
                  request: dict[str, Any]) -> bool:
        """Refuse a prompt larger than the context window, before any script item is spent (the
        model never saw it), in the words and body of this kind of server."""
        if self.context_window is None:
            return False
        tokens = sum(block.tokens for block in flatten_request(request))
        if tokens <= self.context_window:
            return False
        record.status = 400
        if self.kind == "llama.cpp":
            record.error = (f"request ({tokens} tokens) exceeds the available context size "
                            f"({self.context_window} tokens), try increasing it")
            self._record(record)
            handler.send_json(400, {"error": {"code": 400, "message": record.error,
                                              "type": "exceed_context_size_error",
                                              "n_prompt_tokens": tokens, "n_ctx": self.context_window}})
        else:
            record.error = f"prompt is too long: {tokens} tokens > {self.context_window} maximum"
            self._record(record)
            handler.send_json(400, error_body(400, record.error, request_id, "invalid_request_error"),
                              {"request-id": request_id})
        return True

    def _answer_get(self, path: str) -> dict[str, Any] | None:
        if not (self.kind == "llama.cpp" and self.answers_props and urlsplit(path).path == "/props"):
            return None
        settings = {"n_ctx": self.context_window} if self.context_window is not None else {}
        caps = {"supports_tools": self.template_tools, "supports_tool_calls": self.template_tools}
        return {"default_generation_settings": settings, "total_slots": 1, "model_alias": "fake",
                "build_info": "fakeapi", "chat_template_caps": caps}

    def _hold(self, fault: Fault) -> None:
        """Wait out a hang: `hang_s` seconds, or until the server stops."""
        self._stopping.wait(fault.hang_s)

    def _reject(
        self,
        handler: ExchangeHandler,
        record: RecordedRequest,
        request_id: str,
        status: int,
        error_type: str,
        message: str,
        retryable: bool | None = None,
    ) -> None:
        record.status = status
        record.error = message
        self._record(record)
        headers = {"request-id": request_id}
        if retryable is not None:
            headers["x-should-retry"] = "true" if retryable else "false"
        handler.send_json(status, error_body(status, message, request_id, error_type), headers)

    def _answer_fault(
        self, handler: ExchangeHandler, record: RecordedRequest, request_id: str, fault: Fault
    ) -> None:
        record.status = fault.status
        self._record(record)
        headers = {"request-id": request_id}
        if fault.retry_after_ms is not None and (fault.status in _RETRYABLE or fault.status >= 500):
            headers["retry-after"] = "0"
            headers["retry-after-ms"] = str(fault.retry_after_ms)
        message = fault.message or f"fake server fault: HTTP {fault.status}"
        handler.send_json(fault.status, error_body(fault.status, message, request_id), headers)

    def _answer_reply(
        self,
        handler: ExchangeHandler,
        record: RecordedRequest,
        request_id: str,
        item: Reply | Fault,
        request: dict[str, Any],
    ) -> None:
        fault = item if isinstance(item, Fault) and item.kind in STREAM_FAULTS else None
        reply = item if isinstance(item, Reply) else (item.reply or Reply.text(CUT_FILLER_TEXT))
        if isinstance(item, Reply):  # a fault's reply is sent as the fault shapes it
            reply = within_max_tokens(reply, request["max_tokens"])
        # A cut reply was still processed upstream, so the prompt is billed and cached.
        cache_usage = self._cache.account(request, self.now())
        out = 0 if request["max_tokens"] == 0 else output_tokens(reply)
        usage = cache_usage.to_usage(out)
        record.status = 200
        record.usage = usage
        self._record(record)

        headers = {"request-id": request_id}
        if self.kind == "anthropic":  # as the API sends with every answer; llama.cpp sends none
            headers["anthropic-organization-id"] = FAKE_ORGANIZATION
        common = {"message_id": self._new_id("msg"), "model": request["model"], "usage": usage}
        if request.get("stream"):
            events = with_usage_habit(stream_events(reply, **common), self._usage_habit)
            chunks, ending = shape_stream(events, fault)
            held = partial(self._hold, fault) if fault else None
            handler.send_stream(chunks, headers, ending, wait=held,
                                first=held if fault is not None and fault.kind == "slow_start" else None)
        elif fault is not None and fault.kind == "slow_start":
            self._hold(fault)
            handler.send_json(200, message_json(reply, **common), headers)
        elif fault is not None:
            if fault.kind == "stall":
                self._hold(fault)
            handler.send_truncated_json(message_json(reply, **common), headers)
        else:
            handler.send_json(200, message_json(reply, **common), headers)
