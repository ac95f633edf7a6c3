"""`@path` completion that finds a file anywhere below the workspace from a few letters of its
name (`@mod` offers `src/scribe/models.py`), and a Tab key that completes the same way every
time it is pressed.

Fuzzy matches come after the entries of the folder being typed (input.py's listing), from the
files tools see (tools/listing.py: git's view, so .gitignore holds; a pruned walk outside a
repository), never `.git/` or `.scribe/`. The letters typed must appear in order in the file's
name, or, once a `/` is typed, in its path; a name holding them together ranks first, then one
starting with them, then shorter paths. Two letters at least: one letter matches nearly all.

Tab: a completion chosen in the menu (arrows, or an earlier Tab) is taken, and a folder is
opened; else the only candidate is taken, or what all candidates share is typed, or the first
is chosen. It never goes back to what was typed (prompt-toolkit's Tab cycles through the
candidates and then to the text as typed, so Tab on `@sr` went `@src/`, `@sr`, `@src/`, ...).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

from prompt_toolkit.buffer import Buffer, CompletionState
from prompt_toolkit.completion import CompleteEvent, Completion, get_common_complete_suffix
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from scribe.tools.listing import files_under

from ..visible import visible

MIN_LETTERS = 2
MAX_FUZZY = 50
FILES_FRESH_S = 3.0  # the file list is read again after this long (once per burst of typing)


class WorkspaceFiles:
    """The workspace's files as tools see them, relative posix paths, read at most every few seconds."""

    def __init__(self, workspace: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.workspace = workspace
        self.clock = clock
        self._files: list[str] = []
        self._read_at: float | None = None

    def names(self) -> list[str]:
        now = self.clock()
        if self._read_at is None or now - self._read_at > FILES_FRESH_S:
            root = self.workspace.resolve()
            self._files = sorted(p.relative_to(root).as_posix() for p in files_under(root))
            self._read_at = now
        return self._files


def rank(typed: str, path: str) -> tuple[int, int, int, str] | None:
    """How well `path` matches `typed` (lower is better), or None when it does not."""
    query = typed.lower()
    name = path.lower() if "/" in query else path.rsplit("/", 1)[-1].lower()
    position = name.find(query)
    if position >= 0:
        return (0 if position == 0 else 1, len(path), position, path)
    at = 0
    for char in query:
        at = name.find(char, at) + 1
        if at == 0:
            return None
    return (2, len(path), 0, path)


def fuzzy_paths(typed: str, files: WorkspaceFiles, already: set[str]) -> Iterator[Completion]:
    """Files matching `typed` (the text after `@`, perhaps opened with a quote), best first,
    other than `already` offered."""
    quoted = typed.startswith('"')
    query = typed[1:] if quoted else typed
    if len(query.replace("/", "")) < MIN_LETTERS or query.startswith(("/", "~", "../")):
        return
    ranked = sorted((r, p) for p in files.names() if p not in already and (r := rank(query, p)) is not None)
    for _, path in ranked[:MAX_FUZZY]:
        text = f'"{path}"' if quoted or " " in path else path
        yield Completion(text, start_position=-len(typed), display=visible(path), display_meta="found below")


def tab_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("tab")
    def _tab(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            _take(buffer, state.current_completion)
            return
        if buffer.completer is None:
            return
        found = list(buffer.completer.get_completions(buffer.document, CompleteEvent(completion_requested=True)))
        if len(found) == 1:
            _take(buffer, found[0])
            return
        shared = get_common_complete_suffix(buffer.document, found) if found else ""
        if shared:
            buffer.insert_text(shared)
        elif found:  # chosen at once, not by a background completion a quick Enter would outrun
            buffer.complete_state = CompletionState(original_document=buffer.document, completions=found)
            buffer.go_to_completion(0)

    return kb


def _take(buffer: Buffer, completion: Completion) -> None:
    buffer.apply_completion(completion)
    if completion.text.endswith("/"):  # a folder: show what is in it
        buffer.start_completion(select_first=False)
