"""Signals that end scribe, and Ctrl-Z.

Signals that end scribe (SIGTERM from `timeout` or a CI runner, SIGHUP from a closed
terminal, and SIGINT in `scribe run`) take the path Ctrl-C takes: the handler raises `Stopped`,
a KeyboardInterrupt, wherever the main thread is, so a running command is ended and keeps its
partial output as its result, the turn is recorded as interrupted, and then scribe exits with
128 + the signal's number after one line saying so. The first such signal does it; more of
them while scribe is stopping are ignored, so the stop itself is never cut short.

Ctrl-Z (SIGTSTP) suspends the REPL the way it suspends any program, but the terminal is handed
back to the shell first and taken again after `fg` (`suspendable`)."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import typer

ENDING = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """A signal asked scribe to end. Its text is the reason the log records."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


# What signal.signal takes and gives back: a function, SIG_DFL or SIG_IGN, or None (a handler not
# installed from Python).
Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


@dataclass
class Ending:
    """What the handlers saw: the first signal that asked scribe to end, if any."""

    signals: tuple[signal.Signals, ...]
    received: Stopped | None = None
    _previous: dict[int, Handler] = field(default_factory=dict)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            return  # already stopping
        self.received = Stopped(signum)
        raise self.received

    def raise_if_received(self) -> None:
        """Raise the stop again where the first one was absorbed (a turn that recorded it)."""
        if self.received is not None:
            raise self.received



@contextmanager
def ending_signals(signals: tuple[signal.Signals, ...] = ENDING, *, resume: str = "scribe run -c",
                   closing: Callable[[Stopped], str] | None = None) -> Iterator[Ending]:
    """Install the handlers for `signals` for the duration (the previous ones come back after).
    A stop that reaches the end of the block becomes one line and exit 128 + the signal: what
    `closing` says, when given (only it knows what was recorded by then), else that the session
    was recorded and `resume` continues it."""
    ending = Ending(signals)
    for sig in signals:
        ending._previous[sig] = signal.signal(sig, ending.handle)
    try:
        yield ending
    except Stopped as stop:
        say(closing(stop) if closing is not None else
            f"scribe: {stop}; what it was running was ended and recorded; `{resume}` continues the session")
        raise typer.Exit(stop.exit_code) from None
    finally:
        for number, previous in ending._previous.items():
            signal.signal(number, previous if previous is not None else signal.SIG_DFL)


@contextmanager
def suspendable(leave: Callable[[], None], come_back: Callable[[], None]) -> Iterator[None]:
    """For the duration, SIGTSTP (Ctrl-Z, or prompt-toolkit's own Ctrl-Z binding) runs `leave`
    (the terminal as the shell expects it), stops scribe as SIGTSTP's default action does, and
    once it is continued (`fg`: SIGCONT) runs `come_back`. Where nothing could continue it (no
    job control: an orphaned process group) the kernel ignores the stop, and so does this."""

    def handle(signum: int, frame: FrameType | None) -> None:
        leave()
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        try:
            # To this thread, so it is this thread that stops, before the call returns.
            signal.pthread_kill(threading.get_ident(), signal.SIGTSTP)
        finally:
            signal.signal(signal.SIGTSTP, handle)
            come_back()

    previous = signal.signal(signal.SIGTSTP, handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGTSTP, previous)


def say(text: str) -> None:
    """Print the closing line. After SIGHUP the terminal may be gone; then there is no one to
    tell, and failing to write must not turn a clean stop into a traceback."""
    try:
        print(text, file=sys.stderr, flush=True)
    except OSError:
        pass
