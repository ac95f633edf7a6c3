"""Reading what the person types: the prompt-toolkit session, its keys and its completions.

Enter sends; Alt-Enter (or Esc then Enter) starts a new line; a bracketed paste keeps its
newlines. Ctrl-C clears a line that has text, and on an empty line is passed up (the REPL exits
on the second). History is one file per workspace, so Up recalls what was asked here before.
Completion offers slash commands as you type, workspace paths after `@` as you type, and paths
for a path-looking word on Tab.
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.application.current import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.styles import Style

from scribe.log.private import make_private_folder, open_private

from .keys import ANSWER_WORDS, Choice, WordRest

# Never offered: git's and scribe's own folders are not the person's files.
HIDDEN_DIRS = {".git", ".scribe"}
MAX_PATH_COMPLETIONS = 200
STYLE = Style.from_dict({"prompt": "bold", "note": "#8a8a8a", "bottom-toolbar": "noreverse bg:#303030 #d0d0d0"})
# An approval question ignores keys until it has been up this long with no key pressed: keys
# typed in a burst across its appearance were meant for something else.
GUARD_S = 0.3
ESC_TIMEOUT_S = 0.1  # Esc at a question counts after this long with nothing following it


def looks_like_path(word: str) -> bool:
    return "/" in word or word.startswith(("./", "../", "~"))


# The `@path` being typed at the cursor: bare, or opened with a quote (a name with a space).
_AT_PATH = re.compile(r'(?:^|\s)@("[^"]*|[^\s"]*)$')


class ReplCompleter(Completer):
    def __init__(self, workspace: Path, commands: Callable[[], Mapping[str, str]]) -> None:
        self.workspace = workspace
        self.commands = commands  # name -> one-line help; a callable so the registry can grow

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before and "\n" not in before:
            typed = before[1:].lower()
            for name, help_text in self.commands().items():
                if name.startswith(typed):
                    yield Completion("/" + name, start_position=-len(before), display_meta=help_text)
            return
        at = _AT_PATH.search(before)
        if at is not None:
            yield from self.paths(at.group(1))
            return
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if complete_event.completion_requested and looks_like_path(word):
            yield from self.paths(word)

    def paths(self, typed: str) -> Iterator[Completion]:
        """Entries of the folder `typed` points into (workspace-relative unless absolute),
        whose names start with what follows its last slash. A name with a space comes quoted
        (`"my notes.md"`, a folder without its closing quote so completion can go on in it)."""
        quoted = typed.startswith('"')
        fragment = typed[1:] if quoted else typed
        folder_part, _, prefix = fragment.rpartition("/")
        folder_text = folder_part + "/" if folder_part or fragment.startswith("/") else ""
        folder = Path(os.path.expanduser(folder_text or "."))
        if not folder.is_absolute():
            folder = self.workspace / folder
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return  # not a folder (yet): nothing to offer
        shown = 0
        for entry in entries:
            if not entry.name.startswith(prefix) or entry.name in HIDDEN_DIRS:
                continue
            if entry.name.startswith(".") and not prefix.startswith("."):
                continue
            is_dir = entry.is_dir()
            name = entry.name + ("/" if is_dir else "")
            text = folder_text + name
            if quoted or " " in text:
                text = '"' + text + ("" if is_dir else '"')
            yield Completion(text, start_position=-len(typed), display=name)
            shown += 1
            if shown >= MAX_PATH_COMPLETIONS:
                return


def _bindings(rest: WordRest | None) -> KeyBindings:
    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()  # like a shell: Ctrl-C abandons the line, it does not exit
        else:
            event.app.exit(exception=KeyboardInterrupt(), style="class:aborting")

    if rest is not None:
        # The rest of an approval's word (`yes`: "es" and Enter) that arrives after its turn
        # has ended is swallowed here, on an empty line, instead of becoming a message.
        for key in ["enter", *sorted({c for word in ANSWER_WORDS for c in word[1:] + word[1:].upper()})]:
            expected = Condition(lambda key=key: not get_app().current_buffer.text and rest.expects(key))
            kb.add(key, filter=expected)(lambda event, key=key: rest.take(key))
    return kb


def _columns() -> int | None:
    """The terminal's width, for the bottom bar (None when it cannot be told)."""
    try:
        return get_app().output.get_size().columns
    except (OSError, ValueError, NotImplementedError):
        return None


class InputArea:
    def __init__(self, workspace: Path, history: Path, commands: Callable[[], Mapping[str, str]],
                 toolbar: Callable[[int | None], str], rest: WordRest | None = None) -> None:
        make_private_folder(history.parent)
        os.close(open_private(history, os.O_WRONLY | os.O_CREAT))  # what the person typed is theirs alone
        self.session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)),
            completer=ReplCompleter(workspace, commands),
            complete_while_typing=True,
            key_bindings=_bindings(rest),
            bottom_toolbar=lambda: toolbar(_columns()),
            style=STYLE,
            multiline=False,
            prompt_continuation="  ",  # lines after the first align under the text, not the "›"
            enable_history_search=False,
            mouse_support=False,
        )

    def read(self) -> str:
        """One message. Raises KeyboardInterrupt (Ctrl-C on an empty line) or EOFError (Ctrl-D)."""
        return self.session.prompt(FormattedText([("class:prompt", "› ")]))

    def choose(self, question: str, answers: Mapping[str, str], *, on_escape: str, discarded: bool = False,
               guard_s: float = 0.0) -> Choice:
        """One answer among `answers` (key -> the word it stands for, either case), given by
        its key at once; Esc and Ctrl-D mean `on_escape`; Ctrl-C raises KeyboardInterrupt.
        Enter alone, other letters and keys like the arrows answer nothing: the choices are
        shown again. Keys within `guard_s` of the question appearing, or of a key that was
        itself ignored so, are ignored too: the person was typing something else when the
        question appeared (`discarded`: keys typed before it were already thrown away; either
        way a line says so). The answer stays on screen after the question."""
        state = _Asking(time.monotonic(), guard_s, discarded)
        kb = KeyBindings()

        def answer(word: str, by_letter: bool) -> Callable[[KeyPressEvent], None]:
            def pick(event: KeyPressEvent) -> None:
                if not state.settled():
                    return
                for char in word:  # one by one: a dumb terminal echoes only the last insertion
                    event.current_buffer.insert_text(char)
                event.app.exit(result=Choice(word, by_letter))
            return pick

        def again(event: KeyPressEvent) -> None:
            if state.settled():
                state.hint = True

        for key, word in answers.items():
            kb.add(key)(answer(word, True))
            kb.add(key.upper())(answer(word, True))
        kb.add("escape", eager=True)(answer(on_escape, False))
        kb.add("c-d")(answer(on_escape, False))
        kb.add("c-c")(lambda event: event.app.exit(exception=KeyboardInterrupt(), style="class:aborting"))
        kb.add("enter")(again)
        kb.add("<any>")(again)
        # Keys prompt-toolkit binds itself (arrows, Tab, Ctrl-R, ...) would win over <any>:
        # at a question they only show the choices again.
        for key in _editing_keys() - {*answers, *(k.upper() for k in answers)}:
            kb.add(key)(again)
        choices = "  " + " · ".join(f"{key}: {word}" for key, word in answers.items()) + f" · Esc: {on_escape}\n"

        def message() -> FormattedText:
            lines = []
            if state.discarded:
                lines.append(("class:note", "  (keys typed before this question were ignored)\n"))
            if state.hint:
                lines.append(("class:note", choices))
            return FormattedText([*lines, ("class:prompt", question)])

        asker: PromptSession[Choice | str] = PromptSession(key_bindings=kb, style=STYLE)
        asker.app.ttimeoutlen = ESC_TIMEOUT_S
        while True:
            try:
                # handle_sigint=False: the REPL's own SIGINT handler is in place during a turn,
                # and prompt-toolkit would put Python's default one back instead of it when done.
                result = asker.prompt(message, handle_sigint=False)
            except EOFError:  # Ctrl-D where the prompt's own binding ran first (a dumb terminal)
                return Choice(on_escape, False)
            if isinstance(result, Choice):
                return result
            # Enter accepted the empty line, as a dumb terminal's prompt does before our binding
            # can: that answers nothing, so ask again, with the choices.
            state.hint = True


@functools.cache
def _editing_keys() -> frozenset[str]:
    """The first key of every binding prompt-toolkit loads by default, less what must keep its
    meaning (terminal replies, signals) and what a question binds itself."""
    from prompt_toolkit.key_binding.defaults import load_key_bindings

    kept = {Keys.Any, Keys.CPRResponse, Keys.Vt100MouseEvent, Keys.WindowsMouseEvent, Keys.SIGINT, Keys.Ignore,
            Keys.Escape, Keys.ControlC, Keys.ControlD, Keys.ControlM}
    return frozenset(b.keys[0] for b in load_key_bindings().bindings if b.keys[0] not in kept)


@dataclass
class _Asking:
    """An approval question's state while it is up."""

    opened: float
    guard_s: float
    discarded: bool
    hint: bool = False  # show the choices again

    def settled(self) -> bool:
        """Whether a key pressed now counts: the question has been up, with no key ignored, for
        `guard_s`. An ignored key restarts that wait."""
        now = time.monotonic()
        if now - self.opened < self.guard_s:
            self.opened = now
            self.discarded = True
            return False
        return True
