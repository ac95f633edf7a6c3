"""Keys pressed while the REPL is not reading a line: during a turn (or a slash command that
works, like /reflect or /clear), around an approval question, and Ctrl-Z at any time.

While a turn runs, prompt-toolkit is not reading the terminal. `TurnKeys.running()` puts the
terminal in cbreak mode (no line editing, no echo; Ctrl-C and Ctrl-Z still signal) and a thread
reads what is typed:
- Esc alone cancels the turn the way Ctrl-C does: SIGINT to the main thread, whose handler
  raises KeyboardInterrupt wherever the turn is (a model call, a running command).
- Ctrl-D cancels it the same way and then ends the REPL (`leaving`), as Ctrl-D at the prompt
  ends it.
- Everything else is kept and handed to the next prompt as prompt-toolkit type-ahead, so a
  message typed during a turn is waiting at the prompt; meanwhile `typed()` says it, for the
  live area to show as it is typed. No Enter typed before the prompt sends it (`typed_ahead`):
  the line waits there, editable, and Enter at the prompt sends it.
- `asking()`, around an approval question, sets aside what was typed before the question (the
  keys kept so far, what still waits in the terminal's buffer and prompt-toolkit's own
  type-ahead) and what the question takes for typing that went on across its appearance, so
  none of it can answer the question; all of it waits at the next prompt, before what was
  typed after the answer.
- After an answer given by its first letter, the rest of the word and an Enter (`yes⏎`, `n⏎`)
  are swallowed wherever they arrive (this thread, the next question, the next prompt through
  `expects`/`take`), instead of landing on the next question or becoming a message.

`session()`, for the whole REPL, makes Ctrl-Z suspend it (cli/signals.py): the terminal goes back
to the shell as it was found, and after `fg` it is put back in whatever mode it was in, so the
turn's keys (Esc above all) work again.

Without a terminal (tests feed a pipe) only the rule about an answer's rest applies.
"""

from __future__ import annotations

import codecs
import os
import select
import signal
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from prompt_toolkit.application.current import get_app_session
from prompt_toolkit.input import Input
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys

from ..signals import suspendable

# A lone ESC byte with nothing after it this soon is the Esc key; terminals send the bytes of an
# escape sequence (an arrow key, Alt-x) together.
ESC_WAIT_S = 0.05
# How long after an answer, or after the last letter of its word's rest, the next may still
# arrive and be swallowed: during the turn by the reading thread, after it by the next prompt.
CONTINUATION_S = 1.0
ENTER = (Keys.ControlM, Keys.ControlJ)
SHOW_CURSOR = b"\x1b[?25h"
# Never handed to the next prompt: the terminal's replies, not the person's keys.
DROPPED = (Keys.CPRResponse, Keys.Vt100MouseEvent)
# What an Enter typed ahead becomes at the prompt: the new line Alt-Enter gives (input.py).
NEW_LINE = (KeyPress(Keys.Escape, "\x1b"), KeyPress(Keys.ControlM, "\r"))
ANSWER_WORDS = ("yes", "no")
# Keys closer together than this are one stretch of typing: typing that began before a question
# or a prompt appeared and goes on after it was not meant for it (question.py, input.py).
TYPING_GAP_S = 0.3  # the approval answers given by a letter, whose rest may follow it


class WordRest(Protocol):
    """What the next prompt needs from the keys typed before it: the type-ahead handed over
    unsent, and the rest of an answer's word arriving late swallowed."""

    def expects(self, key: str) -> bool: ...
    def take(self, key: str) -> None: ...
    def typed_ahead(self) -> float | None: ...


@dataclass(frozen=True)
class Choice:
    """An approval's answer: the word, and whether it was given by its first letter (then the
    rest of the word may follow, and is swallowed). The word "message" is no answer: the person
    typed `message` instead, for the model."""

    word: str
    by_letter: bool
    message: str = ""


def swallow(keys: Sequence[KeyPress], rest: str | None) -> tuple[list[KeyPress], str | None]:
    """Drop from the front of `keys` the letters of `rest` (either case) and the Enter after
    them. Returns the keys left and what is still expected (None once the word is over)."""
    index = 0
    while rest is not None and index < len(keys):
        key = keys[index].key
        if rest and len(key) == 1 and key.lower() == rest[0]:
            rest = rest[1:]
        elif key in ENTER:
            rest = None
        else:
            return list(keys[index:]), None  # something else: the person moved on
        index += 1
    return list(keys[index:]), rest


def unsent(keys: Sequence[KeyPress]) -> list[KeyPress]:
    """Keys typed ahead of a prompt as they reach it: nothing in them sends the line. An Enter
    at their end is dropped (the line waits, Enter at the prompt sends it) and one between two
    lines starts a new line, as Alt-Enter does."""
    keys = list(keys)
    while keys and keys[-1].key in ENTER:
        keys.pop()
    return [new for key in keys for new in (NEW_LINE if key.key in ENTER else (key,))]


def _pending_keys(fd: int) -> list[KeyPress]:
    """What waits in the terminal's input buffer, read without waiting for a line to end."""
    mode = termios.tcgetattr(fd)
    raw = [*mode[:6], list(mode[6])]
    raw[3] &= ~termios.ICANON
    raw[6][termios.VMIN], raw[6][termios.VTIME] = 0, 0
    data = b""
    termios.tcsetattr(fd, termios.TCSANOW, raw)
    try:
        while chunk := os.read(fd, 1024):
            data += chunk
    except OSError:
        pass  # the terminal went away: nothing more waits in it
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    keys: list[KeyPress] = []
    parser = Vt100Parser(keys.append)
    parser.feed(data.decode("utf-8", errors="replace"))
    parser.flush()
    return [key for key in keys if key.key not in DROPPED]


def interrupt_main() -> None:
    """What Ctrl-C does, from another thread: SIGINT to the main thread, so a blocking call
    there (a socket read, a wait on a command) is interrupted too."""
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)


def terminal_input() -> tuple[Input, int | None]:
    """The input prompt-toolkit reads, and its file descriptor when that is a terminal."""
    source = get_app_session().input
    try:
        fd = source.fileno()
    except (NotImplementedError, ValueError, OSError):  # a dummy input has none
        return source, None
    return source, fd if os.isatty(fd) else None


def _cbreak(mode: list[Any]) -> list[Any]:
    """termios attributes with line editing and echo off (ISIG kept: Ctrl-C still signals) and
    CR kept as CR, so Enter reaches prompt-toolkit as the Enter it knows."""
    new = [*mode[:6], list(mode[6])]
    new[0] &= ~termios.ICRNL  # [0]: input modes
    new[3] &= ~(termios.ICANON | termios.ECHO)  # [3]: local modes
    new[6][termios.VMIN], new[6][termios.VTIME] = 1, 0
    return new


def as_text(keys: Sequence[KeyPress]) -> str:
    """Keys as the text they type, as a line editor would make it: characters and pastes added,
    Backspace taking the last one back, Enter a new line; keys that move or complete ignored."""
    text = ""
    for key in keys:
        if key.key in ENTER:
            text += "\n"
        elif key.key in (Keys.Backspace, Keys.ControlH):
            text = text[:-1]
        elif key.key == Keys.BracketedPaste or (len(key.key) == 1 and key.key.isprintable()):
            text += key.data
    return text


class Aside:
    """What an approval question sets aside for the next prompt instead of taking it for an
    answer (see TurnKeys.asking)."""

    def __init__(self, before: Callable[[], int], keep: Callable[[Sequence[KeyPress]], None]) -> None:
        self.before = before  # sets aside what was typed before the question; how many keys it was
        self.keep = keep  # keys the question took for typing begun before it


class TurnKeys:
    """One per REPL; see the module docstring."""

    def __init__(self, on_escape: Callable[[], None] = interrupt_main) -> None:
        self.on_escape = on_escape
        self._lock = threading.Lock()
        self._kept: list[KeyPress] = []
        self._rest: str | None = None  # the rest of an answer's word, still to swallow
        self._rest_from = 0.0  # when the answer, or the last letter of its rest, came
        self._reader: _Reader | None = None
        self._last_key_at = 0.0  # when the last key kept for the next prompt was typed
        # Keys typed before (or on across) an approval question: none answered it, and they wait
        # at the next prompt before the keys kept after it.
        self._aside: list[KeyPress] = []
        self.leaving = False  # Ctrl-D during a turn: the REPL ends once the turn has stopped

    def on_terminal(self) -> bool:
        return terminal_input()[1] is not None

    @contextmanager
    def session(self) -> Iterator[None]:
        """For the whole REPL: the terminal as it was found is what it is left as (between turns
        echo stays off, see `running`, so this puts it back at the end) and what the shell gets
        while scribe is suspended."""
        _, fd = terminal_input()
        if fd is None:
            yield
            return
        saved = termios.tcgetattr(fd)
        held: list[list[Any]] = []  # the mode at Ctrl-Z, taken again after fg

        def leave() -> None:
            held[:] = [termios.tcgetattr(fd)]
            termios.tcsetattr(fd, termios.TCSANOW, saved)
            if sys.stdout.isatty():  # unbuffered: this may interrupt a write to sys.stdout
                os.write(sys.stdout.fileno(), SHOW_CURSOR)  # a spinner may have hidden it

        def come_back() -> None:
            if held:
                termios.tcsetattr(fd, termios.TCSANOW, held.pop())

        try:
            with suspendable(leave, come_back):
                yield
        finally:
            termios.tcsetattr(fd, termios.TCSANOW, saved)

    @contextmanager
    def running(self) -> Iterator[None]:
        """For the length of a turn: cbreak mode and the reading thread (on a terminal)."""
        source, fd = terminal_input()
        if fd is None:
            yield
            return
        saved = termios.tcgetattr(fd)
        termios.tcsetattr(fd, termios.TCSANOW, _cbreak(saved))
        reader = self._reader = _Reader(fd, self._key)
        reader.start()
        try:
            yield
        finally:
            # An Esc pressed as the turn ends is delivered once the terminal is itself again.
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                reader.stop()
                self._reader = None
                # Line mode again, but still without echo: a key typed between now and the next
                # prompt waits there instead of being echoed onto the screen (`session` restores
                # echo when the REPL ends).
                quiet = [*saved[:6], list(saved[6])]
                quiet[3] &= ~termios.ECHO
                termios.tcsetattr(fd, termios.TCSANOW, quiet)
                with self._lock:
                    kept, self._kept = self._kept, []
                store_typeahead(source, kept)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    @contextmanager
    def asking(self) -> Iterator[Aside]:
        """Around an approval question: stop reading; yield what sets aside, for the next prompt,
        what was typed before the question (called just before it is drawn) and the keys the
        question takes for typing begun before it; afterwards keep what followed the answer,
        less its word's rest."""
        source, fd = terminal_input()
        reader = self._reader

        def before() -> int:
            if fd is None:
                return 0
            typed = get_typeahead(source) + _pending_keys(fd)
            with self._lock:
                moved, self._kept = [*self._kept, *typed], []
                self._aside += moved
            return len(moved)

        def keep(keys: Sequence[KeyPress]) -> None:
            with self._lock:
                self._aside += [key for key in keys if key.key not in DROPPED]

        try:
            if reader is not None:
                reader.pause()
            yield Aside(before, keep)
        finally:
            # Keys read together with the answer are prompt-toolkit's type-ahead now.
            left = get_typeahead(source)
            with self._lock:
                left = self._swallowed(left)
                if left:
                    self._last_key_at = time.monotonic()
                if reader is not None:
                    self._kept[:0] = left
            if reader is None:
                store_typeahead(source, left)
            else:
                reader.resume()

    def answered(self, choice: Choice) -> None:
        """After `choice`: the rest of its word and an Enter are to be swallowed."""
        with self._lock:
            self._rest = choice.word[1:] if choice.by_letter else None
            self._rest_from = time.monotonic()

    # -- the reading thread's side -------------------------------------------------------------

    def _swallowed(self, keys: list[KeyPress]) -> list[KeyPress]:
        """`keys` less the rest of the last answer's word (call with the lock held)."""
        if self._rest is None or not keys:
            return keys
        if time.monotonic() > self._rest_from + CONTINUATION_S:
            self._rest = None
            return keys
        left, self._rest = swallow(keys, self._rest)
        if len(left) < len(keys):
            self._rest_from = time.monotonic()
        return left

    def _key(self, key: KeyPress, lone: bool) -> None:
        with self._lock:
            if not self._swallowed([key]):
                return
            if key.key == Keys.Escape and lone:
                self.on_escape()
                return
            if key.key == Keys.ControlD:
                self.leaving = True
                self.on_escape()
                return
            if key.key not in DROPPED:
                self._kept.append(key)
                self._last_key_at = time.monotonic()

    # -- the next prompt's side (WordRest) --------------------------------------------------------

    def typed_ahead(self) -> float | None:
        """Just before the prompt reads: what was set aside at a question, what was kept during
        the turn and what was typed since (still in the terminal's buffer) is the prompt's
        type-ahead, less the rest of an answer's word, and `unsent`: it waits at the prompt, and
        only an Enter there sends it. Returns when the last of it was typed (None: nothing was)."""
        source, fd = terminal_input()
        if fd is None:
            return None
        kept, pending = get_typeahead(source), _pending_keys(fd)
        with self._lock:
            aside, self._aside = self._aside, []
            keys = [*aside, *self._swallowed(kept + pending)]
            # What waited in the terminal was typed since the turn ended, a moment ago.
            last = time.monotonic() if pending else self._last_key_at if keys else None
        store_typeahead(source, unsent(keys))
        return last if keys else None

    def typed(self) -> str:
        """What has been typed for the next prompt so far, as text (the live area shows it)."""
        with self._lock:
            return as_text([*self._aside, *self._kept])

    def expects(self, key: str) -> bool:
        """Whether `key` ("enter" or a letter) is the next of the last answer's word."""
        with self._lock:
            if self._rest is None or time.monotonic() > self._rest_from + CONTINUATION_S:
                return False
            return key == "enter" or (bool(self._rest) and key.lower() == self._rest[0])

    def take(self, key: str) -> None:
        with self._lock:
            if self._rest is not None:
                self._rest = None if key == "enter" else self._rest[1:]
                self._rest_from = time.monotonic()


class _Reader(threading.Thread):
    """Reads the terminal while a turn runs, turning bytes into prompt-toolkit key presses."""

    def __init__(self, fd: int, on_key: Callable[[KeyPress, bool], None]) -> None:
        super().__init__(name="scribe-keys", daemon=True)
        self.fd, self.on_key = fd, on_key
        self._wake_r, self._wake_w = os.pipe()
        self._cond = threading.Condition()
        self._state = "reading"  # reading | paused | stopped
        self._idle = threading.Event()  # set while the thread is not reading
        self._flushing = False  # the parser is emitting what waited: an ESC there stood alone
        self._parser = Vt100Parser(lambda key: self.on_key(key, self._flushing))
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def run(self) -> None:
        waiting = False  # bytes were parsed since the last flush
        try:
            while True:
                with self._cond:
                    while self._state == "paused":
                        self._idle.set()
                        self._cond.wait()
                    if self._state == "stopped":
                        return
                    self._idle.clear()
                ready, _, _ = select.select([self.fd, self._wake_r], [], [], ESC_WAIT_S if waiting else None)
                if self._wake_r in ready:
                    os.read(self._wake_r, 64)
                    continue
                if self.fd in ready:
                    data = os.read(self.fd, 1024)
                    if not data:
                        return  # the terminal is gone
                    self._parser.feed(self._decoder.decode(data))
                    waiting = True
                elif waiting:
                    self._flushing = True
                    try:
                        self._parser.flush()
                    finally:
                        self._flushing = False
                    waiting = False
        except OSError:
            return  # the terminal went away under us: nothing more to read
        finally:
            self._idle.set()

    def _set(self, state: str) -> None:
        with self._cond:
            self._state = state
            self._cond.notify()
        os.write(self._wake_w, b"x")

    def pause(self) -> None:
        """Stop reading; returns once the thread has stopped."""
        self._set("paused")
        self._idle.wait(timeout=1.0)

    def resume(self) -> None:
        self._set("reading")

    def stop(self) -> None:
        self._set("stopped")
        self.join(timeout=1.0)
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
