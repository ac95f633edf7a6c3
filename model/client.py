"""The model client: one streamed Messages API call through the official SDK.

Retries are ours (see retry.py): 429, 5xx and 529 answers, failed or silent connections, and
an answer that broke after it began (cut, ended early, garbled: see complete.py) are retried as a
whole call, and nothing is appended to the log until a call has completed, so a retry never
duplicates an event; its text is not shown twice either (shown.py). The stream is read in a
thread of its own (attempt.py), so a silent server is reported as it happens.

Failures are told apart by what the SDK's public API promises (`APIStatusError`,
`APIConnectionError`, `APITimeoutError`), never by its HTTP library's classes, which it does not
export and has changed; the causes it chains (Python's `raise ... from`) only refine a message
where they are there (connection.py).

The SDK's import is most of a cold start: over a second here, longer than everything else scribe
loads. It is imported when the first call needs it (`import_sdk`); a front end may start that
import sooner, in a thread (cli/preload.py), so an interactive session can show its prompt at once
and import while the person types.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import anthropic

from scribe.context.render import Request
from scribe.log.events import Block
from scribe.log.usage import Tokens
from scribe.settings.values import DEFAULT_REQUEST_TIMEOUT_S, Settings

from .attempt import Answering, Attempt, Began, Done, FilledMessageStream, Piece
from .complete import BrokenAnswer
from .connection import connect_timed_out, connection_refused, lost_words
from .errors import BadBaseUrl, ContextOverflow, MissingCredentials, ModelError, SideCallTooSlow
from .events import Notice, Retrying, Stage, TextDelta, TextWithdrawn, Waiting
from .retry import RetryPolicy, retry_after, should_retry
from .shown import ShownText
from .window import anthropic_url, read_overflow

CallEvent = TextDelta | TextWithdrawn | Retrying | Waiting | Notice
CONNECT_TIMEOUT_S = 10.0  # a server that takes longer to accept a connection is not answering
SLOW_AFTER_S = 3.0  # silence worth a word to the person (a Waiting event)
# The longest a call waits without looking whether it was cancelled.
WAIT_SLICE_S = 0.05
SDK_BASE_URL = "https://api.anthropic.com"  # the SDK's own, when ANTHROPIC_BASE_URL is unset


@dataclass(frozen=True)
class CallResult:
    content: list[Block]
    stop_reason: str | None
    message_id: str
    model: str
    tokens: Tokens  # as the server billed them
    latency_ms: int
    server: str | None = None  # the host it went to, when that is not Anthropic's API


def check_credentials(environ: dict[str, str] | None = None) -> None:
    """Refuse, before any call, an environment the SDK would fail on: no key, or a base URL
    that is not an http(s) address (the SDK would retry a misspelt one as a lost connection)."""
    env = os.environ if environ is None else environ
    if not (env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN")):
        raise MissingCredentials(
            "no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a compatible server; "
            "ANTHROPIC_BASE_URL points scribe at one)"
        )
    base_url = env.get("ANTHROPIC_BASE_URL")
    if base_url:
        try:
            parts = urlsplit(base_url)
            parts.port  # noqa: B018 - parsing the port is the check
        except ValueError as exc:
            raise BadBaseUrl(f"ANTHROPIC_BASE_URL {base_url!r} is not a valid URL: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadBaseUrl(f"ANTHROPIC_BASE_URL {base_url!r} is not an http:// or https:// address")


def import_sdk() -> ModuleType:
    """The SDK, imported at the first call that needs it (see the module docstring)."""
    import anthropic  # noqa: PLC0415 - deferred on purpose, see the module docstring

    return anthropic


class ModelClient:
    def __init__(self, *, retry: RetryPolicy | None = None, request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
                 slow_after_s: float = SLOW_AFTER_S) -> None:
        check_credentials()
        self.retry = retry or RetryPolicy()
        self.request_timeout_s = request_timeout_s
        self.connect_timeout_s = min(CONNECT_TIMEOUT_S, request_timeout_s)
        self.slow_after_s = slow_after_s
        self._client: anthropic.Anthropic | None = None
        self._told_no_usage = False  # a server that omits usage is named once, not at every call

    @classmethod
    def for_settings(cls, settings: Settings) -> ModelClient:
        return cls(retry=RetryPolicy(settings.max_retries, settings.retry_backoff_s),
                   request_timeout_s=settings.request_timeout_s)

    @property
    def client(self) -> anthropic.Anthropic:
        if self._client is None:
            anthropic = import_sdk()
            # max_retries=0: retries are ours (see retry.py), so every one is visible and configurable.
            # The read timeout bounds the silence between two pieces of the answer, not the whole
            # answer, so a long streamed answer is never cut; connecting gets a short one of its own.
            timeout = anthropic.Timeout(self.request_timeout_s, connect=self.connect_timeout_s)
            self._client = anthropic.Anthropic(max_retries=0, timeout=timeout)
        return self._client

    @property
    def on_anthropic(self) -> bool:
        """Whether the calls go to Anthropic's own API (not a compatible server: llama.cpp,
        Ollama, a proxy), as far as the base URL tells."""
        return anthropic_url(self._base_url())

    @property
    def server(self) -> str | None:
        """The server the calls go to when it is not Anthropic's API (its host), else None: as a
        call's usage event names it, unless the answer proves Anthropic's (model/attempt.py)."""
        return None if self.on_anthropic else self._server()

    def stream(self, request: Request,
               cancelled: threading.Event | None = None) -> Generator[CallEvent | CallResult, None, None]:
        """Yield text as it arrives (each piece once, across retries), then the completed call.
        Raises ModelError. `cancelled`: set from any thread, it stops the call within a slice of
        its waits, as a Ctrl-C would (KeyboardInterrupt)."""
        client = self.client
        anthropic = import_sdk()
        shown = ShownText()
        for attempt in range(self.retry.retries + 1):
            if attempt:
                shown.retry()
            started = time.monotonic()
            try:
                message, from_anthropic = yield from self._attempt(client, request, attempt + 1, shown, cancelled)
            except anthropic.APIStatusError as exc:
                headers = {k.lower(): v for k, v in exc.response.headers.items()}
                if attempt == self.retry.retries or not _worth_retry(exc, headers):
                    raise _refused(exc, attempt) from None
                wait = self.retry.delay(attempt + 1, retry_after(headers))
                yield self._retrying(attempt, f"{_status_reason(exc)}", wait)
                _pause(wait, cancelled)
                continue
            except (anthropic.APIConnectionError, BrokenAnswer) as exc:
                # A connection that failed or went silent, or an answer cut or garbled after it
                # began: the call is redone whole.
                reason = self._failure(exc)
                # Nothing listens there: a retry minutes of backoff later finds the same, so it is
                # said at once (a server still starting is the person's to wait for).
                refused = connection_refused(exc)
                if attempt == self.retry.retries or refused or (isinstance(exc, BrokenAnswer) and not exc.retry):
                    raise ModelError(f"model call failed{_after(attempt)}: {reason}") from None
                wait = self.retry.delay(attempt + 1)
                yield self._retrying(attempt, reason, wait)
                _pause(wait, cancelled)
                continue
            except anthropic.AnthropicError as exc:
                raise ModelError(f"model call failed: {_reason(exc)}") from None
            yield from shown.finish()
            # Priced at a list price only if Anthropic's API answered: its own host, or its header
            # passed on by a proxy. Another server's call names the server instead (log/pricing.py).
            yield _result(message, started, None if self.on_anthropic or from_anthropic else self._server())
            return
        raise AssertionError("unreachable: the last attempt returns or raises")

    def complete(self, request: Request, *, deadline_s: float | None = None,
                 cancelled: threading.Event | None = None) -> CallResult:
        """A whole call without the live text (observer, reflector, curator). With `deadline_s`,
        a call still answering after that many seconds is stopped (its stream closed) and
        SideCallTooSlow raised; the deadline is checked at each piece of the answer and each
        silence the stream reports, so a model writing on and on is stopped within one of them."""
        started = time.monotonic()
        calls = self.stream(request, cancelled)
        try:
            for item in calls:
                if isinstance(item, CallResult):
                    return item
                if deadline_s is not None and time.monotonic() - started > deadline_s:
                    raise SideCallTooSlow(f"stopped after {deadline_s:g} s, longer than the agent's recent calls "
                                          "take")
        finally:
            calls.close()
        raise ModelError("model call ended without a message")  # unreachable: stream raises or yields one

    def _attempt(self, client: anthropic.Anthropic, request: Request, number: int, shown: ShownText,
                 cancelled: threading.Event | None) -> Generator[CallEvent, None, tuple[Any, bool]]:
        """One try: pass on its text, say so when the server goes quiet, return its message and
        whether Anthropic's API sent it (its header)."""
        attempt = Attempt(lambda: FilledMessageStream(
            lambda: client.messages.create(**request.params(), stream=True), request.model))
        attempt.start()
        quiet = from_anthropic = False
        stage: Stage = "connecting"
        try:
            silent_since = time.monotonic()
            while True:
                stop_if_cancelled(cancelled)
                step = attempt.next(WAIT_SLICE_S)
                if step is None:
                    if quiet or time.monotonic() - silent_since < self.slow_after_s:
                        continue
                    quiet = True
                    yield Waiting(number, self._server(), self.slow_after_s, self.request_timeout_s, stage)
                    continue
                quiet, silent_since = False, time.monotonic()
                if isinstance(step, Began):
                    stage, from_anthropic = "reading", step.anthropic
                elif isinstance(step, Answering):
                    stage = "answering"
                elif isinstance(step, Piece):
                    yield from shown.take(step.text)
                elif isinstance(step, Done):
                    if step.usage_missing and not self._told_no_usage:
                        self._told_no_usage = True
                        yield Notice(_no_usage_note(self._server(), step.usage_missing))
                    return step.message, from_anthropic
                else:
                    raise step.error
        finally:
            attempt.abandon()

    def _retrying(self, attempt: int, reason: str, wait: float) -> Retrying:
        return Retrying(attempt + 1, f"{reason}; try {attempt + 2} of {self.retry.retries + 1} in {wait:.1f}s")

    def _failure(self, exc: BaseException) -> str:
        """One line for a failed connection or a broken answer; a timeout says it timed out."""
        if isinstance(exc, BrokenAnswer):
            return str(exc)
        if isinstance(exc, import_sdk().APITimeoutError):
            if connect_timed_out(exc):
                return f"could not connect to {self._server()}: timed out after {self.connect_timeout_s:g} s"
            return (f"timed out after {self.request_timeout_s:g} s without a word from {self._server()} "
                    "(request_timeout_s sets this)")
        if connection_refused(exc):
            return (f"could not connect to {self._server()}: connection refused (no server is listening "
                    "there; is it running, and does ANTHROPIC_BASE_URL name it?)")
        return f"connection lost ({_reason(lost_words(exc))})"

    def _server(self) -> str:
        base_url = self._base_url()
        return urlsplit(base_url).netloc or base_url

    def _base_url(self) -> str:
        """The client's base URL; before the client is made, the one it will take (the SDK reads
        ANTHROPIC_BASE_URL then), so the REPL's bar can say where calls go without the SDK's
        import, which takes seconds, ahead of the prompt."""
        if self._client is not None:
            return str(self._client.base_url)
        return os.environ.get("ANTHROPIC_BASE_URL") or SDK_BASE_URL


def stop_if_cancelled(cancelled: threading.Event | None) -> None:
    """Raise KeyboardInterrupt, once, when a cancel was asked for (as tools/base.py's namesake
    does for the tools, a layer this one does not import)."""
    if cancelled is not None and cancelled.is_set():
        cancelled.clear()
        raise KeyboardInterrupt  # as Ctrl-C does: the record says "cancelled by the user"


def _pause(seconds: float, cancelled: threading.Event | None) -> None:
    """Sleep `seconds` (a retry's backoff), in slices a cancel can end."""
    until = time.monotonic() + seconds
    while (left := until - time.monotonic()) > 0:
        stop_if_cancelled(cancelled)
        time.sleep(min(left, WAIT_SLICE_S))
    stop_if_cancelled(cancelled)


def _result(message: Any, started: float, server: str | None) -> CallResult:
    usage = message.usage
    return CallResult(
        content=[wire_block(b) for b in message.content],
        stop_reason=message.stop_reason,
        message_id=message.id,
        model=message.model,
        tokens=Tokens(usage.input_tokens or 0, usage.cache_read_input_tokens or 0,
                      usage.cache_creation_input_tokens or 0, usage.output_tokens or 0),
        latency_ms=int((time.monotonic() - started) * 1000),
        server=server,
    )


def wire_block(block: Any) -> Block:
    """A response block in the form the API accepts back in a later request."""
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if block.type == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    return block.model_dump(mode="json", exclude_none=True)


def _no_usage_note(server: str, missing: frozenset[str]) -> str:
    if "start" in missing:
        what = "message_start (the start of its answer, which holds the input token count)"
    else:
        what = "token usage" if missing == {"input", "output"} else f"{next(iter(missing))} token count"
    return (f"{server} sent no {what} with its answer: what it left out is counted as 0 tokens, so cost "
            "and cache figures leave it out")


def _reason(exc: BaseException | str) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def _error_type(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("type", ""))
    return ""


# Error types the API may send as an `error` event in the middle of a 200 stream, worth a retry.
TRANSIENT_ERROR_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}


def _worth_retry(exc: anthropic.APIStatusError, headers: dict[str, str]) -> bool:
    if exc.status_code < 400:  # an error event inside a stream that began with 200
        return _error_type(exc) in TRANSIENT_ERROR_TYPES
    return should_retry(exc.status_code, headers)


def _status_reason(exc: anthropic.APIStatusError) -> str:
    if exc.status_code < 400:
        return f"the server reported {_error_type(exc) or 'an error'} mid-answer"
    return f"HTTP {exc.status_code} {_error_type(exc)}"


def _refused(exc: anthropic.APIStatusError, retries: int) -> ModelError:
    """The failure to raise: a request refused for its size says how big it was and the window."""
    message = _status_message(exc, retries)
    overflow = read_overflow(_detail(exc)) if exc.status_code == 400 else None
    if overflow is not None:
        return ContextOverflow(message, overflow.requested, overflow.window)
    return ModelError(message)


def _detail(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return str(error.get("message", ""))
    return ""


def _status_message(exc: anthropic.APIStatusError, retries: int) -> str:
    detail = _detail(exc) or _reason(exc)
    if exc.status_code < 400:
        return f"model call failed{_after(retries)}: the server reported {_error_type(exc) or 'an error'} mid-answer: {detail}"
    hint = {
        401: " (check ANTHROPIC_API_KEY)",
        403: " (the key lacks permission for this)",
        404: " (unknown model? --model, /model or SCRIBE_MODEL picks another)",
        429: " (rate limited)",
        529: " (the API is overloaded)",
    }.get(exc.status_code, "")
    return f"model call failed{_after(retries)}: HTTP {exc.status_code}: {detail}{hint}"


def _after(retries: int) -> str:
    return f" after {retries + 1} tries" if retries else ""
