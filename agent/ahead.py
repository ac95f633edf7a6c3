"""Compressing memory between turns, off the person's path, where side calls are slow.

On a local server one observer call can take longer than the turn it serves (a one-slot
llama.cpp server evaluates the observer's whole input before it writes a word). The REPL then
compresses right after a turn ends, in a thread, while the person reads the answer and types the
next message: what the next call would have compressed before it started, sooner, and from a
little under the threshold (compress.AHEAD_SHARE), since the next message will most likely take
the raw tail over it.

The log keeps one writer: the thread appends only while the main thread waits for input, and
the REPL joins it (`finish`) before it appends anything itself (a turn, a command, the end of
the session). Headless `scribe run` never works ahead: a compression the window needs happens
before the call that needs it, as always.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from urllib.parse import urlsplit

from scribe.log.events import Event, UsageEvent

from .compress import Compressor
from .protocol import AgentEvent
from .session import Session

# A server whose last model call took at least this long is slow enough to work ahead for.
SLOW_CALL_MS = 3000


def works_ahead(mode: str, base_url: str | None, events: Sequence[Event]) -> bool:
    """`observe_ahead`: "always", "never", or "auto": a server other than Anthropic's whose
    latest model call (as the log measured it) took SLOW_CALL_MS or more."""
    if mode != "auto":
        return mode == "always"
    host = urlsplit(base_url).hostname or "" if base_url else "api.anthropic.com"
    if host == "anthropic.com" or host.endswith(".anthropic.com"):
        return False
    last = next((e for e in reversed(events) if isinstance(e, UsageEvent)), None)
    return last is not None and last.latency_ms >= SLOW_CALL_MS


class AheadCompression:
    """One compression between turns, run in a thread. `finish` waits for it and hands back
    what it did, to be shown, or raises what it raised (an error writing the log, say)."""

    def __init__(self, memory: Compressor, session: Session) -> None:
        self._memory, self._session = memory, session
        self._events: list[AgentEvent] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="scribe-compress-ahead", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def finish(self) -> list[AgentEvent]:
        # Not interruptible: until the thread has appended its last line, no one else may write.
        while self._thread.is_alive():
            try:
                self._thread.join()
            except KeyboardInterrupt:
                continue
        if self._error is not None:
            raise self._error
        return self._events

    def _run(self) -> None:
        try:
            self._events.extend(self._memory.before_call(self._session, ahead=True))
            self._session.sync()
        except BaseException as exc:  # handed to the main thread by finish(), which raises it
            self._error = exc
