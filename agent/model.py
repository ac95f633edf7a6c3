"""The model client: one streamed Messages API call through the official SDK.

Retries are ours (see retry.py): 429, 5xx and 529 answers, failed connections, and a stream cut
after it began are retried as a whole call, and nothing is appended to the log until a call has
completed, so a retry never duplicates an event.

The SDK takes about two seconds to import, longer than everything else scribe loads. It is
imported when the first call needs it; `preload_sdk` starts that import in a thread, so an
interactive session can show its prompt at once and import while the person types.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import anthropic

from scribe.memory.events import Block
from scribe.memory.render import Request

from .errors import BadBaseUrl, MissingCredentials, ModelError
from .protocol import Retrying, TextDelta
from .retry import RetryPolicy, retry_after, should_retry


@dataclass(frozen=True)
class CallResult:
    content: list[Block]
    stop_reason: str | None
    message_id: str
    model: str
    input: int
    cache_read: int
    cache_write: int
    output: int
    latency_ms: int


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


def preload_sdk() -> None:
    """Import the SDK in a background thread. Not a daemon: an exit waits for the import to
    finish rather than tearing down an interpreter mid-import."""
    threading.Thread(target=_sdk, name="scribe-sdk-import").start()


def _sdk() -> ModuleType:
    import anthropic  # noqa: PLC0415 - deferred on purpose, see the module docstring

    return anthropic


class ModelClient:
    def __init__(self, *, retry: RetryPolicy | None = None, timeout_s: float = 600.0) -> None:
        check_credentials()
        self.retry = retry or RetryPolicy()
        self._timeout_s = timeout_s
        self._client: anthropic.Anthropic | None = None

    @property
    def client(self) -> anthropic.Anthropic:
        if self._client is None:
            # max_retries=0: retries are ours (see retry.py), so every one is visible and configurable.
            self._client = _sdk().Anthropic(max_retries=0, timeout=self._timeout_s)
        return self._client

    def stream(self, request: Request) -> Iterator[TextDelta | Retrying | CallResult]:
        """Yield text as it arrives, then the completed call. Raises ModelError."""
        client = self.client
        anthropic = _sdk()
        import httpx2  # noqa: PLC0415 - the SDK's HTTP layer, loaded with it

        for attempt in range(self.retry.retries + 1):
            started = time.monotonic()
            try:
                with client.messages.stream(**request.params()) as stream:
                    for event in stream:
                        if event.type == "text" and event.text:
                            yield TextDelta(event.text)
                    message = stream.get_final_message()
            except anthropic.APIStatusError as exc:
                headers = {k.lower(): v for k, v in exc.response.headers.items()}
                if attempt == self.retry.retries or not should_retry(exc.status_code, headers):
                    raise ModelError(_status_message(exc, attempt)) from None
                wait = self.retry.delay(attempt + 1, retry_after(headers))
                yield Retrying(attempt + 1, f"HTTP {exc.status_code} {_short(exc)}; try {attempt + 2} of "
                                            f"{self.retry.retries + 1} in {wait:.1f}s")
                time.sleep(wait)
                continue
            except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
                # A connection that failed, or a stream cut after it began: the call is redone whole.
                if attempt == self.retry.retries:
                    raise ModelError(f"model call failed{_after(attempt)}: connection lost ({_reason(exc)})") from None
                wait = self.retry.delay(attempt + 1)
                yield Retrying(attempt + 1, f"connection lost ({_reason(exc)}); try {attempt + 2} of "
                                            f"{self.retry.retries + 1} in {wait:.1f}s")
                time.sleep(wait)
                continue
            except anthropic.AnthropicError as exc:
                raise ModelError(f"model call failed: {_reason(exc)}") from None
            yield _result(message, started)
            return
        raise AssertionError("unreachable: the last attempt returns or raises")

    def complete(self, request: Request) -> CallResult:
        """A whole call without the live text (observer, reflector)."""
        for item in self.stream(request):
            if isinstance(item, CallResult):
                return item
        raise ModelError("model call ended without a message")  # unreachable: stream raises or yields one


def _result(message: Any, started: float) -> CallResult:
    usage = message.usage
    return CallResult(
        content=[wire_block(b) for b in message.content],
        stop_reason=message.stop_reason,
        message_id=message.id,
        model=message.model,
        input=usage.input_tokens or 0,
        cache_read=usage.cache_read_input_tokens or 0,
        cache_write=usage.cache_creation_input_tokens or 0,
        output=usage.output_tokens or 0,
        latency_ms=int((time.monotonic() - started) * 1000),
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


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


def _short(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("type", ""))
    return ""


def _status_message(exc: anthropic.APIStatusError, retries: int) -> str:
    detail = ""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            detail = str(error.get("message", ""))
    detail = detail or _reason(exc)
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
