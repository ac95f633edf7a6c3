"""Compressing memory between turns, off the person's path, where side calls are slow.

On a local server one observer call can take longer than the turn it serves (a one-slot
llama.cpp server evaluates the observer's whole input before it writes a word). The REPL then
compresses right after a turn ends, in a thread, while the person reads the answer and types the
next message: what the next call would have compressed before it started, sooner, and from a
little under the threshold (compress.AHEAD_SHARE), since the next message will most likely take
the raw tail over it.

Nobody waits for it. The thread works on a draft of the session (agent/session/draft.py) and never
writes the log; the main thread takes what it made at a safe point: before the next model call,
or between turns. A turn that starts while it runs goes ahead without it as long as its request
fits the model's window (only a request that would not fit waits for it); a session that ends
while it runs gives it a second, then records that a side call was left unfinished. Headless
`scribe run` never works ahead: a compression the window needs happens before the call that
needs it, as always.

Where a person waits (the REPL, `Agent.compress_off_path`), a compression a turn's call would
make before it (a threshold passed, not the window) is started the same way instead, whatever
the server, and the call goes ahead at once; it is taken before a later call or between turns.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from urllib.parse import urlsplit

from scribe.agent.compression.compressor import Compressor
from scribe.agent.protocol import AgentEvent, Compressed
from scribe.agent.session.draft import Draft, take
from scribe.agent.session.session import Session
from scribe.log.events import ErrorEvent, Event, UsageEvent

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
    """One compression between turns, run in a thread on a draft of the session. `in_turn`: one
    a turn's call would have made before it, started instead as the call goes ahead (the window
    does not need it), so the turn's own request stays raw as it would have then."""

    def __init__(self, memory: Compressor, session: Session, *, in_turn: bool = False) -> None:
        self.in_turn = in_turn
        self.draft = Draft(session)
        self._memory = memory.detached()
        self._events: list[AgentEvent] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="scribe-compress-ahead", daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the compression to end, at most `timeout_s`; True when it has."""
        self._thread.join(timeout_s)
        return self.done

    def take(self) -> list[AgentEvent]:
        """Its work appended to the session (on the main thread, once `done`), and what it did,
        to be shown; what it raised is raised here."""
        assert self.done, "take() a compression that has ended"
        if self._error is not None:
            raise self._error
        made = take(self.draft)
        self.draft.session.sync()
        return [told for event in self._events if (told := _as_taken(event, made)) is not None]

    def _run(self) -> None:
        try:
            self._events.extend(self._memory.before_call(self.draft, ahead=not self.in_turn))
        except BaseException as exc:  # handed to the main thread by take(), which raises it
            self._error = exc


def _as_taken(event: AgentEvent, made: dict[int, int]) -> AgentEvent | None:
    """What the draft's event says once its work is in the session: a compression names the
    seqs its chunk (and a reflection's chunks) got there, and one left out was not made."""
    if not isinstance(event, Compressed):
        return event
    if event.seq not in made:
        return None  # the session compressed some of it meanwhile: nothing of this is in the log
    if event.kind == "reflection":
        return replace(event, seq=made[event.seq], seq_from=made.get(event.seq_from, event.seq_from),
                       seq_to=made.get(event.seq_to, event.seq_to))
    return replace(event, seq=made[event.seq])


def left_unfinished(session: Session) -> None:
    """Record that a compression between turns was still waiting on its model when the session
    ended: that call's tokens are not in the log (the next session compresses again)."""
    session.append(ErrorEvent, kind="compression_left", purpose="observer",
                   message="a compression between turns was still waiting on its model when the session ended; "
                           "its side call's usage is unknown and is not in the log")
