"""Long pastes shown short: a bracketed paste of more than a few lines (or a long line) stands in
the input box, and so in the transcript once sent, as `[pasted 200 lines, 9,067 chars]`; the
message sent, logged and kept in the history is the whole text. Ctrl-O shows it: in the box it
puts the text in place of its mark (to read or edit it); on an empty line it prints what the
last message pasted.
"""

from __future__ import annotations

from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys

from ..visible import visible

# A paste longer than this is shown as its mark.
PASTE_LINES = 4
PASTE_CHARS = 800
EXPAND_KEY = "c-o"


def line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def mark_of(text: str) -> str:
    return f"[pasted {line_count(text):,} lines, {len(text):,} chars]"


def is_long(text: str) -> bool:
    return line_count(text) > PASTE_LINES or len(text) > PASTE_CHARS


class Pastes:
    """The long pastes of the message being typed, by their marks, in the order pasted."""

    def __init__(self) -> None:
        self._texts: list[tuple[str, str]] = []  # (mark, text)
        self.last_sent: list[str] = []  # the texts the last message pasted

    def paste(self, data: str, line: str) -> str:
        """What a paste of `data` into the box holding `line` puts there: the text, or its mark.
        A paste whose mark is no longer in the box (cleared, edited) is forgotten."""
        self._texts = [(mark, text) for mark, text in self._texts if mark in line]
        text = data.replace("\r\n", "\n").replace("\r", "\n")
        if not is_long(text):
            return text
        self._texts.append((mark_of(text), text))
        return mark_of(text)

    def expand(self, line: str) -> str:
        """`line` with each mark still in it replaced by its text (a mark edited away is not)."""
        for mark, text in self._texts:
            line = line.replace(mark, text, 1)
        return line

    def sent(self, line: str) -> str:
        """The message of a line accepted: marks expanded; the pastes start over."""
        message = self.expand(line)
        self.last_sent = [text for mark, text in self._texts if mark in line]
        self._texts = []
        return message

    def pending(self, line: str) -> bool:
        return any(mark in line for mark, _ in self._texts)


class ExpandedHistory(FileHistory):
    """The history keeps what was sent, not its marks: recalled in a later session, a mark would
    stand for nothing."""

    def __init__(self, filename: str, pastes: Pastes) -> None:
        super().__init__(filename)
        self.pastes = pastes

    def append_string(self, string: str) -> None:
        super().append_string(self.pastes.expand(string))


def paste_bindings(pastes: Pastes) -> KeyBindings:
    kb = KeyBindings()

    @kb.add(Keys.BracketedPaste)
    def _paste(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text(pastes.paste(event.data, event.current_buffer.text))

    @kb.add(EXPAND_KEY)
    def _expand(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if pastes.pending(buffer.text):
            buffer.text = pastes.expand(buffer.text)
            buffer.cursor_position = len(buffer.text)
        elif not buffer.text and pastes.last_sent:
            texts = list(pastes.last_sent)
            run_in_terminal(lambda: _print("\n".join(texts)))

    return kb


def _print(text: str) -> None:
    print(visible(text), flush=True)
