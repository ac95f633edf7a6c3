"""Reading what the person types: the prompt-toolkit session, its keys and its completions.

Enter sends; Alt-Enter (or Esc then Enter) starts a new line; a bracketed paste keeps its
newlines. Ctrl-C clears a line that has text, and on an empty line is passed up (the REPL exits
on the second). History is one file per workspace, so Up recalls what was asked here before.
Completion offers slash commands as you type, workspace paths after `@` as you type, and paths
for a path-looking word on Tab.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.styles import Style

# Never offered: git's and scribe's own folders are not the person's files.
HIDDEN_DIRS = {".git", ".scribe"}
MAX_PATH_COMPLETIONS = 200
STYLE = Style.from_dict({"prompt": "bold", "bottom-toolbar": "noreverse bg:#303030 #d0d0d0"})


def looks_like_path(word: str) -> bool:
    return "/" in word or word.startswith(("./", "../", "~"))


class ReplCompleter(Completer):
    def __init__(self, workspace: Path, commands: Callable[[], Mapping[str, str]]) -> None:
        self.workspace = workspace
        self.commands = commands  # name -> one-line help; a callable so the registry can grow

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before and "\n" not in before:
            for name, help_text in self.commands().items():
                if name.startswith(before[1:]):
                    yield Completion("/" + name, start_position=-len(before), display_meta=help_text)
            return
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if word.startswith("@"):
            yield from self.paths(word[1:])
        elif complete_event.completion_requested and looks_like_path(word):
            yield from self.paths(word)

    def paths(self, fragment: str) -> Iterator[Completion]:
        """Entries of the folder `fragment` points into (workspace-relative unless absolute),
        whose names start with what follows its last slash."""
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
            yield Completion(folder_text + name, start_position=-len(prefix) - len(folder_text), display=name)
            shown += 1
            if shown >= MAX_PATH_COMPLETIONS:
                return


def _bindings() -> KeyBindings:
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

    return kb


class InputArea:
    def __init__(self, workspace: Path, history: Path, commands: Callable[[], Mapping[str, str]],
                 toolbar: Callable[[], str]) -> None:
        history.parent.mkdir(parents=True, exist_ok=True)
        self.session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)),
            completer=ReplCompleter(workspace, commands),
            complete_while_typing=True,
            key_bindings=_bindings(),
            bottom_toolbar=lambda: toolbar(),
            style=STYLE,
            multiline=False,
            prompt_continuation="  ",  # lines after the first align under the text, not the "›"
            enable_history_search=False,
            mouse_support=False,
        )

    def read(self) -> str:
        """One message. Raises KeyboardInterrupt (Ctrl-C on an empty line) or EOFError (Ctrl-D)."""
        return self.session.prompt(FormattedText([("class:prompt", "› ")]))

    def choose(self, question: str, answers: Mapping[str, str], on_escape: str) -> str:
        """One key press among `answers` (key -> the word it stands for, either case); Esc means
        `on_escape`; Ctrl-C raises KeyboardInterrupt; other keys are ignored. Returns the word,
        which stays on screen after the question."""
        kb = KeyBindings()

        def answer(word: str) -> Callable[[KeyPressEvent], None]:
            def pick(event: KeyPressEvent) -> None:
                for char in word:  # one by one: a dumb terminal echoes only the last insertion
                    event.current_buffer.insert_text(char)
                event.app.exit(result=word)
            return pick

        for key, word in answers.items():
            kb.add(key)(answer(word))
            kb.add(key.upper())(answer(word))
        kb.add("escape", eager=True)(answer(on_escape))
        kb.add("c-c")(lambda event: event.app.exit(exception=KeyboardInterrupt(), style="class:aborting"))
        kb.add("<any>")(lambda event: None)
        asker: PromptSession[str] = PromptSession(key_bindings=kb, style=STYLE)
        # handle_sigint=False: the REPL's own SIGINT handler is in place during a turn, and
        # prompt-toolkit would put Python's default one back instead of it when done.
        return asker.prompt(FormattedText([("class:prompt", question)]), handle_sigint=False)
