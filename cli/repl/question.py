"""An approval question's answer, read from the keyboard, that only a deliberate answer gives.

- A single key answers only alone: `y` (yes) or `n` (no) as the first key once the question is
  on screen, with nothing typed after it for `LONE_S` (or Enter right after it). A key that
  follows makes the letter the start of a word, so `yse` is typed text, never a yes.
- Any other key is text, and then every key is text until Enter, which answers only if the text
  is a whole answer word (`yes`, `y`, `no`, `n`, `always`). A permanent permission has no key
  of its own: `always` is typed as a word.
- A sentence typed there (`what about xyz, is that a good idea?`) allows nothing: it is the
  person saying something else, so the turn stops and the sentence waits at the prompt as the
  next message (`Choice.message`). A single word that is no answer (`yse`) asks again.
- Esc and Ctrl-D decline, Ctrl-C stops the turn, Ctrl-Z suspends scribe.

What was typed before the question was drawn is set aside just before it is drawn (`Aside`, from
keys.py), and so is typing that goes on across its appearance: every key within `GUARD_S` of the
first drawing, or of the key set aside before it. None of it answers the question; all of it
waits at the next prompt. Once the person pauses, the next key counts, so an `n` a second after
the question answers no. The question never asks the terminal
for its cursor position (CPR): a terminal that does not answer one makes prompt-toolkit print a
warning over the question two seconds in and wait a second after the answer, reading keys all
the while.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application
from prompt_toolkit.application.current import get_app_session
from prompt_toolkit.data_structures import Point
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.key_binding import KeyBindings, KeyPress, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.output import Output
from prompt_toolkit.output.vt100 import Vt100_Output, is_dumb_terminal

from .input import STYLE
from .keys import TYPING_GAP_S, Aside, Choice
from .live import rows_taken

# A key within this long of the question's first drawing, or of a key set aside for that, was
# not typed at it: it is set aside for the next prompt. A person reading the question takes longer.
GUARD_S = TYPING_GAP_S
# A lone answer key answers once nothing has followed it for this long: a letter with another
# close behind it (`yse`, `yes please`) is the start of a word. Typing runs faster than this
# between keys; a person who meant the one key has stopped.
LONE_S = 0.5
ESC_TIMEOUT_S = 0.1  # Esc at a question counts after this long with nothing following it


@dataclass(frozen=True)
class Answers:
    """What answers a question: single keys (`y` -> yes), whole words typed and sent with Enter
    (`always` -> always), the answer Esc and Ctrl-D give, and what a word does, said while it is
    typed (`always`: allow it for the rest of the session)."""

    keys: Mapping[str, str]
    words: Mapping[str, str]
    on_escape: str
    meaning: Mapping[str, str]

    def choices(self) -> str:
        keys = " · ".join(f"{key}: {word}" for key, word in self.keys.items())
        words = " · ".join(f"{word}⏎: {self.meaning.get(word, word)}" for word in self.words.values()
                           if word not in self.keys.values())
        return f"  {keys} · {words} · Esc: {self.on_escape}"

    def said(self, text: str) -> str:
        """What Enter would do with `text` typed, said under it while it is being typed."""
        typed = text.strip().lower()
        if typed in self.words:
            word = self.words[typed]
            return f"  Enter: {word}" + (f" – {self.meaning[word]}" if word in self.meaning else "")
        started = [word for word in self.words if len(word) > 1 and typed and word.startswith(typed)]
        if started:
            word = self.words[started[0]]
            return f"  {started[0]}⏎: {self.meaning.get(word, word)}"
        if len(typed.split()) == 1:
            return f"  not an answer (Enter asks again) · Esc: {self.on_escape}"
        return f"  not an answer: Enter stops the turn, keeping this as your message · Esc: {self.on_escape}"


@dataclass
class _Asking:
    """A question's state while it is up."""

    guard_s: float
    aside: Aside | None  # where keys typed before the question go: the next prompt
    kept: bool  # keys typed before the question were set aside: a line says so
    shown: float | None = None  # when it was first drawn
    quiet_from: float = 0.0  # keys before this moment are still the typing the question cut into
    typing: bool = False  # something other than a lone answer key was typed: keys are text now
    answered: bool = False  # the answer is being shown: no more notes
    note: str = ""  # a line above the question (the choices, what was wrong with a word)
    lone: int = 0  # counts the lone answer keys pressed: a wait for what follows one is the latest

    def drawn(self) -> None:
        if self.shown is None:
            self.shown = time.monotonic()
            self.quiet_from = self.shown + self.guard_s

    def cut_into(self, keys: Sequence[KeyPress]) -> bool:
        """Whether `keys`, pressed now, belong to typing begun before the question (then they are
        set aside for the next prompt, and the typing is taken to go on for another `guard_s`).
        Without a terminal, keys come from a script: none is."""
        if self.guard_s <= 0 or self.typing:
            return False
        now = time.monotonic()
        if self.shown is not None and now >= self.quiet_from:
            return False
        self.quiet_from = max(self.quiet_from, now + self.guard_s)
        if self.aside is not None:
            self.aside.keep(keys)
        self.kept = True
        return True

    def again(self, note: str) -> None:
        """Back to an empty question: the next key may answer alone."""
        self.typing, self.note = False, note


def ask(question: str, answers: Answers, *, aside: Aside | None = None, guard_s: float = 0.0) -> Choice:
    """The answer to `question` (see the module docstring). Ctrl-C raises KeyboardInterrupt.
    `aside` sets aside, for the next prompt, what was typed before the question (just before it
    is drawn) and typing that goes on across its appearance. The answer stays on screen after
    the question."""
    state = _Asking(guard_s, aside, kept=False)
    output = _output_without_cpr()
    asker: PromptSession[Choice | str] = PromptSession(
        key_bindings=_bindings(state, answers), style=STYLE, enable_suspend=True, output=output)
    asker.app.ttimeoutlen = ESC_TIMEOUT_S
    _erase_as_rewrapped(asker.app)
    # From the moment it starts being drawn: a process kept waiting by a busy machine between
    # drawing and noting it would otherwise take keys typed at the question for keys before it.
    asker.app.before_render += lambda _: state.drawn()
    # Text typed makes it text mode; the prompt emptying its buffer to ask again does not.
    asker.default_buffer.on_text_changed += lambda buffer: setattr(
        state, "typing", state.typing or bool(buffer.text))

    def message() -> FormattedText:
        lines = []
        if state.kept:
            lines.append(("class:note", "  (what you were typing is not an answer: it waits at the prompt)\n"))
        note = answers.said(asker.default_buffer.text) if state.typing else state.note
        if note and not state.answered:
            lines.append(("class:note", note + "\n"))
        return FormattedText([*lines, ("class:prompt", question)])

    state.kept = aside is not None and aside.before() > 0
    dumb = output is None and is_dumb_terminal()
    while True:
        if dumb:
            state.drawn()  # a dumb terminal's prompt is written out at once, not rendered
        try:
            # handle_sigint=False: the REPL's own SIGINT handler is in place during a turn,
            # and prompt-toolkit would put Python's default one back instead of it when done.
            result = asker.prompt(message, handle_sigint=False)
        except EOFError:  # Ctrl-D where the prompt's own binding ran first (a dumb terminal)
            return Choice(answers.on_escape, False)
        if isinstance(result, Choice):
            return result
        # Enter accepted the line, as a dumb terminal's prompt does before our binding can.
        judged = _judge(result, answers, state)
        if judged is not None:
            return judged


def _judge(text: str, answers: Answers, state: _Asking) -> Choice | None:
    """What Enter on `text` answers; None when it answers nothing and the question stays."""
    typed = text.strip()
    if not typed:
        state.again(answers.choices())
    elif typed.lower() in answers.words:
        return Choice(answers.words[typed.lower()], False)
    elif len(typed.split()) == 1:
        state.again(f"  “{typed}” is not an answer\n" + answers.choices())
    else:
        return Choice("message", False, message=typed)
    return None


def _bindings(state: _Asking, answers: Answers) -> KeyBindings:
    kb = KeyBindings()
    first = Condition(lambda: not state.typing)

    def answer(event: KeyPressEvent, choice: Choice) -> None:
        state.answered = True
        if not choice.message:  # the answer, not what was typed, stays on screen
            event.current_buffer.text = ""
            for char in choice.word:  # one by one: a dumb terminal echoes only the last insertion
                event.current_buffer.insert_text(char)
        event.app.exit(result=choice)

    def counted(handler: Callable[[KeyPressEvent], None]) -> Callable[[KeyPressEvent], None]:
        """`handler`, unless the key is typing the question cut into: then it waits at the next prompt."""
        def pressed(event: KeyPressEvent) -> None:
            if state.cut_into(event.key_sequence):
                event.app.invalidate()  # the line saying where it went
                return
            handler(event)
        return pressed

    def lone_key(word: str) -> Callable[[KeyPressEvent], None]:
        def pressed(event: KeyPressEvent) -> None:
            # Text for now; it answers `word` if nothing follows it (see `alone`).
            event.current_buffer.insert_text(event.data)
            state.lone += 1
            asyncio.get_running_loop().call_later(LONE_S, alone, event, word, event.data, state.lone)
        return pressed

    def alone(event: KeyPressEvent, word: str, key: str, lone: int) -> None:
        if state.answered or lone != state.lone or event.current_buffer.text != key or not event.app.is_running:
            return  # answered meanwhile, another key followed, or the text changed
        answer(event, Choice(word, True))

    def show_choices(event: KeyPressEvent) -> None:
        state.note = answers.choices()

    def anything(event: KeyPressEvent) -> None:
        if event.data.isprintable():
            event.current_buffer.insert_text(event.data)
        else:
            show_choices(event)

    def enter(event: KeyPressEvent) -> None:
        judged = _judge(event.current_buffer.text, answers, state)
        if judged is None:
            event.current_buffer.reset()
        else:
            answer(event, judged)

    for key, word in answers.keys.items():
        kb.add(key, filter=first)(counted(lone_key(word)))
        kb.add(key.upper(), filter=first)(counted(lone_key(word)))
    kb.add("escape", eager=True)(lambda event: answer(event, Choice(answers.on_escape, False)))
    kb.add("c-d")(lambda event: answer(event, Choice(answers.on_escape, False)))
    kb.add("c-c")(lambda event: event.app.exit(exception=KeyboardInterrupt(), style="class:aborting"))
    kb.add("enter")(counted(enter))
    kb.add("<any>", filter=first)(counted(anything))
    # Keys prompt-toolkit binds itself (arrows, Tab, Ctrl-R, ...) would win over <any>: before
    # anything is typed they only show the choices; after, they edit the text. (A paste is text;
    # Ctrl-Z keeps the prompt's own binding: it suspends.)
    lone = {*answers.keys, *(key.upper() for key in answers.keys)}
    for key in _editing_keys() - lone:
        kb.add(key, filter=first)(counted(show_choices))
    return kb


def _erase_as_rewrapped(app: Application[Any]) -> None:
    """On a resize prompt-toolkit erases the question to draw it again, going up the rows it drew.
    A terminal that rewraps its lines when it narrows (tmux, VTE, kitty, iTerm2) has turned each
    row longer than the new width into several, and those left above would show the question
    twice: go up the rows the drawn ones take at the width the terminal has now (as the live area
    does, live.py). A terminal that does not rewrap crops its rows instead, and loses nothing."""
    renderer = app.renderer
    erase = renderer.erase

    def erase_rewrapped(leave_alternate_screen: bool = True) -> None:
        screen, drawn, cursor = renderer._last_screen, renderer._last_size, renderer._cursor_pos
        width = app.output.get_size().columns
        if screen is not None and drawn is not None and 0 < width < drawn.columns:
            # each row as written: prompt-toolkit pads the question's rows with spaces, which count
            rows = [min(max(screen.data_buffer[y], default=-1) + 1, drawn.columns) for y in range(cursor.y)]
            renderer._cursor_pos = Point(x=cursor.x, y=rows_taken(rows, width) + cursor.x // width)
        erase(leave_alternate_screen)

    renderer.erase = erase_rewrapped  # type: ignore[method-assign]


def _output_without_cpr() -> Output | None:
    """The session's output, made never to ask for the cursor position (None: the default,
    which a dumb terminal needs to get prompt-toolkit's dumb prompt)."""
    output = get_app_session().output
    if not isinstance(output, Vt100_Output) or not output.responds_to_cpr:
        return None
    return Vt100_Output(output.stdout, output.get_size, term=output.term,
                        default_color_depth=output.default_color_depth, enable_bell=output.enable_bell,
                        enable_cpr=False)


@functools.cache
def _editing_keys() -> frozenset[str]:
    """The first key of every binding prompt-toolkit loads by default, less what must keep its
    meaning (terminal replies, signals), what a question binds itself, and the characters (vi
    mode binds letters): those are text."""
    from prompt_toolkit.key_binding.defaults import load_key_bindings

    kept = {Keys.Any, Keys.CPRResponse, Keys.Vt100MouseEvent, Keys.WindowsMouseEvent, Keys.SIGINT, Keys.Ignore,
            Keys.Escape, Keys.ControlC, Keys.ControlD, Keys.ControlM, Keys.ControlZ, Keys.BracketedPaste}
    firsts = {b.keys[0] for b in load_key_bindings().bindings}
    return frozenset(key for key in firsts if key not in kept and not (len(key) == 1 and key.isprintable()))
