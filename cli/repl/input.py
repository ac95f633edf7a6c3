"""Reading what the person types: the prompt-toolkit session, its keys and its completions.

Enter sends; Alt-Enter (or Esc then Enter) starts a new line; a bracketed paste keeps its
newlines, and a long one is shown short (pastes.py). Ctrl-C clears a line that has text, and on
an empty line is passed up (the REPL exits on the second). Ctrl-Z suspends scribe. (An approval
question reads its answer in question.py.) History is one file per workspace, so Up recalls what
was asked here before.
Completion offers slash commands as you type, workspace paths after `@` as you type (the folder's
entries, then files found below by a few letters of their name: fuzzy.py), and paths for a
path-looking word on Tab.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.application.current import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent, merge_key_bindings
from prompt_toolkit.styles import Style

from scribe.log.private import make_private_folder, open_private

from .fuzzy import WorkspaceFiles, fuzzy_paths, tab_bindings
from .keys import ANSWER_WORDS, TYPING_GAP_S, WordRest
from .pastes import ExpandedHistory, Pastes, paste_bindings

# Never offered: git's and scribe's own folders are not the person's files.
HIDDEN_DIRS = {".git", ".scribe"}
MAX_PATH_COMPLETIONS = 200
# What `read` returns for Shift-Tab: not a line, a request for the next permission mode.
CYCLE_MODE = "\x00cycle-mode"
BUSY_POLL_S = 0.25  # how often the prompt looks whether the work its bar names has started or ended
STYLE = Style.from_dict({"prompt": "bold", "note": "#8a8a8a", "bottom-toolbar": "noreverse bg:#303030 #d0d0d0"})


def looks_like_path(word: str) -> bool:
    return "/" in word or word.startswith(("./", "../", "~"))


# The `@path` being typed at the cursor: bare, or opened with a quote (a name with a space).
_AT_PATH = re.compile(r'(?:^|\s)@("[^"]*|[^\s"]*)$')


class ReplCompleter(Completer):
    def __init__(self, workspace: Path, commands: Callable[[], Mapping[str, str]]) -> None:
        self.workspace = workspace
        self.commands = commands  # name -> one-line help; a callable so the registry can grow
        self.files = WorkspaceFiles(workspace)

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
            listed = list(self.paths(at.group(1)))
            yield from listed
            yield from fuzzy_paths(at.group(1), self.files, {c.text.strip('"') for c in listed})
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
        if HIDDEN_DIRS.intersection(folder.parts):
            return
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


class TypingOn:
    """Typing that began before the prompt appeared (its keys were the prompt's type-ahead) and
    goes on at it, each key within TYPING_GAP_S of the one before: an Enter in it was typed
    during the turn, and does not send. Once the person pauses, Enter sends."""

    def __init__(self) -> None:
        self.until = 0.0
        self.now = False  # the key being handled belongs to that typing

    def begin(self, last_key_at: float) -> None:
        self.until = last_key_at + TYPING_GAP_S

    def pressed(self, _: object) -> None:
        at = time.monotonic()
        self.now = at < self.until
        if self.now:
            self.until = at + TYPING_GAP_S


def _bindings(rest: WordRest | None, typing: TypingOn) -> KeyBindings:
    kb = KeyBindings()

    @kb.add("enter", filter=Condition(lambda: typing.now))
    def _not_yet(event: KeyPressEvent) -> None:
        """An Enter typed on from the turn: the line waits for one pressed at the prompt."""

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
            _swallow(kb, rest, key)
    return kb


def _swallow(kb: KeyBindings, rest: WordRest, key: str) -> None:
    """`key` typed on an empty line is the rest of an approval's word while one is expected."""
    expected = Condition(lambda: not get_app().current_buffer.text and rest.expects(key))

    @kb.add(key, filter=expected)
    def _take(event: KeyPressEvent) -> None:
        rest.take(key)


def _columns() -> int | None:
    """The terminal's width, for the bottom bar (None when it cannot be told)."""
    try:
        return get_app().output.get_size().columns
    except (OSError, ValueError, NotImplementedError):
        return None


class InputArea:
    def __init__(self, workspace: Path, history: Path, commands: Callable[[], Mapping[str, str]],
                 toolbar: Callable[[int | None], str], rest: WordRest | None = None,
                 busy: Callable[[], bool] = lambda: False) -> None:
        make_private_folder(history.parent)
        os.close(open_private(history, os.O_WRONLY | os.O_CREAT))  # what the person typed is theirs alone
        self.pastes = Pastes()
        self.typing = TypingOn()
        self.session: PromptSession[str] = PromptSession(
            history=ExpandedHistory(str(history), self.pastes),
            completer=ReplCompleter(workspace, commands),
            complete_while_typing=True,
            key_bindings=merge_key_bindings([_bindings(rest, self.typing), paste_bindings(self.pastes),
                                             tab_bindings(), self._mode_bindings()]),
            bottom_toolbar=lambda: toolbar(_columns()),
            style=STYLE,
            multiline=False,
            prompt_continuation="  ",  # lines after the first align under the text, not the "›"
            enable_history_search=False,
            mouse_support=False,
            enable_suspend=True,  # Ctrl-Z suspends scribe (cli/signals.py) instead of typing ^Z
        )
        self.session.app.key_processor.before_key_press += self.typing.pressed
        self.rest = rest
        # Whether the bar names work still running (a compression, a curation): the bar is drawn
        # again when it ends, without waiting for a key.
        self.busy = busy
        # What the next prompt starts with: a message typed at an approval question instead of
        # an answer (approve.py), for the person to send or change.
        self.draft = ""

    def _mode_bindings(self) -> KeyBindings:
        """Shift-Tab: the next permission mode (the REPL cycles them), the line kept as it was."""
        kb = KeyBindings()

        @kb.add("s-tab")
        def _cycle(event: KeyPressEvent) -> None:
            self.draft = event.current_buffer.text
            event.app.exit(result=CYCLE_MODE)

        return kb

    def once_drawn(self, callback: Callable[[], None]) -> None:
        """Call `callback` once, when the prompt has first been drawn."""
        app = self.session.app

        def drawn(_: object) -> None:
            app.after_render -= drawn
            callback()

        app.after_render += drawn

    def read(self) -> str:
        """One message (a long paste in it whole: the box showed it short, see pastes.py). Raises
        KeyboardInterrupt (Ctrl-C on an empty line) or EOFError (Ctrl-D)."""
        draft, self.draft = self.draft, ""
        typed = self.rest.typed_ahead() if self.rest is not None else None  # it waits, unsent
        if typed is not None:
            self.typing.begin(typed)
        line = self.session.prompt(FormattedText([("class:prompt", "› ")]), default=draft,
                                   pre_run=self._redraw_when_done)
        return line if line == CYCLE_MODE else self.pastes.sent(line)

    def _redraw_when_done(self) -> None:
        """While the prompt is up: when the work the bar names starts or ends, the bar is drawn
        again (prompt-toolkit redraws on a key, and nobody may press one for minutes)."""
        app = self.session.app

        async def watch() -> None:
            was = self.busy()
            while True:
                await asyncio.sleep(BUSY_POLL_S)
                if self.busy() != was:
                    was = not was
                    app.invalidate()

        app.create_background_task(watch())
