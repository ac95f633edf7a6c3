"""An approval question's answer, read from the keyboard, that only a deliberate answer gives.

- A single key answers only as the first key pressed after the question is on screen, and only
  once the question has been up `GUARD_S`: a key sooner was typed for something else, in a
  burst across the question's appearance. `y` is yes and `n` no.
- Any other key (or an answer key pressed too soon) is text, and then every key is text until
  Enter, which answers only if the text is a whole answer word (`yes`, `y`, `no`, `n`,
  `always`). A permanent permission has no key of its own: `always` is typed as a word.
- A sentence typed there (`what about xyz, is that a good idea?`) allows nothing: it is the
  person saying something else, so the turn stops and the sentence waits at the prompt as the
  next message (`Choice.message`). A single word that is no answer (`yse`) asks again.
- Esc and Ctrl-D decline, Ctrl-C stops the turn, Ctrl-Z suspends scribe.

The guard counts from the question's first drawing, and what waited before it is thrown away
just before it is drawn (`discard`, from keys.py). The question never asks the terminal for its
cursor position (CPR): a terminal that does not answer one makes prompt-toolkit print a warning
over the question two seconds in and wait a second after the answer, reading keys all the while.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from prompt_toolkit import PromptSession
from prompt_toolkit.application.current import get_app_session
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.output import Output
from prompt_toolkit.output.vt100 import Vt100_Output, is_dumb_terminal

from .input import STYLE
from .keys import Choice

# A key within this long of the question's first drawing was not typed at it: it does not
# answer alone (it starts text instead). A person reading the question takes longer.
GUARD_S = 0.3
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
    discarded: bool  # keys typed before the question were thrown away: a line says so
    shown: float | None = None  # when it was first drawn
    typing: bool = False  # something other than a lone answer key was typed: keys are text now
    answered: bool = False  # the answer is being shown: no more notes
    note: str = ""  # a line above the question (the choices, what was wrong with a word)

    def drawn(self) -> None:
        if self.shown is None:
            self.shown = time.monotonic()

    def first_key_answers(self) -> bool:
        """Whether a lone answer key pressed now answers: nothing else typed yet, and the
        question up for the guard's length (without a terminal, keys come from a script)."""
        if self.typing:
            return False
        if self.guard_s <= 0:
            return True
        return self.shown is not None and time.monotonic() - self.shown >= self.guard_s

    def again(self, note: str) -> None:
        """Back to an empty question, as if just drawn: the next key may answer alone."""
        self.typing, self.note, self.shown = False, note, time.monotonic()


def ask(question: str, answers: Answers, *, discard: Callable[[], int] = lambda: 0,
        guard_s: float = 0.0) -> Choice:
    """The answer to `question` (see the module docstring). Ctrl-C raises KeyboardInterrupt.
    `discard` throws away what was typed before the question and says how much; it is called
    just before the question is drawn. The answer stays on screen after the question."""
    state = _Asking(guard_s, discarded=False)
    output = _output_without_cpr()
    asker: PromptSession[Choice | str] = PromptSession(
        key_bindings=_bindings(state, answers), style=STYLE, enable_suspend=True, output=output)
    asker.app.ttimeoutlen = ESC_TIMEOUT_S
    asker.app.after_render += lambda _: state.drawn()
    # Text typed makes it text mode; the prompt emptying its buffer to ask again does not.
    asker.default_buffer.on_text_changed += lambda buffer: setattr(
        state, "typing", state.typing or bool(buffer.text))

    def message() -> FormattedText:
        lines = []
        if state.discarded:
            lines.append(("class:note", "  (keys typed before this question were ignored)\n"))
        note = answers.said(asker.default_buffer.text) if state.typing else state.note
        if note and not state.answered:
            lines.append(("class:note", note + "\n"))
        return FormattedText([*lines, ("class:prompt", question)])

    state.discarded = discard() > 0
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

    def lone_key(word: str) -> Callable[[KeyPressEvent], None]:
        def pressed(event: KeyPressEvent) -> None:
            if state.first_key_answers():
                answer(event, Choice(word, True))
            else:
                event.current_buffer.insert_text(event.data)  # too soon: it is text
        return pressed

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
        kb.add(key, filter=first)(lone_key(word))
        kb.add(key.upper(), filter=first)(lone_key(word))
    kb.add("escape", eager=True)(lambda event: answer(event, Choice(answers.on_escape, False)))
    kb.add("c-d")(lambda event: answer(event, Choice(answers.on_escape, False)))
    kb.add("c-c")(lambda event: event.app.exit(exception=KeyboardInterrupt(), style="class:aborting"))
    kb.add("enter")(enter)
    kb.add("<any>", filter=first)(anything)
    # Keys prompt-toolkit binds itself (arrows, Tab, Ctrl-R, ...) would win over <any>: before
    # anything is typed they only show the choices; after, they edit the text. (A paste is text;
    # Ctrl-Z keeps the prompt's own binding: it suspends.)
    lone = {*answers.keys, *(key.upper() for key in answers.keys)}
    for key in _editing_keys() - lone:
        kb.add(key, filter=first)(show_choices)
    return kb


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
