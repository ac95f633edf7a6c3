"""Project notes: the curated memory that outlives a session, kept in `<state>/notes.md`.

A person can read and edit the file. Each entry is one markdown bullet ending with where it
came from, `[from <session-id>#<seq>]`, so every note can be traced to the log line that
taught it. This module is the pure part: what a session contributes, what a curated answer
must look like to be kept, and the token budget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .events import Event, ObservationEvent, ReflectionEvent, UserEvent
from .tokens import estimate_text

HEADER = "# Project notes\n\nCurated by scribe from earlier sessions; edit freely. One fact per line.\n"
PROVENANCE = re.compile(r"\[from ([\w-]+)#(\d+)\]\s*$")
ENTRY = re.compile(r"^\s*[-*] ")

CURATOR_SYSTEM = """\
You are the Curator of a coding project's notes: the facts about the project that a coding \
agent should still know next week. You merge what one session taught into the existing notes.

Keep only lasting facts: the user's preferences and conventions (style, tools, commands to run), \
decisions and their reasons, constraints, facts about the project (targets, layouts, names), and \
pitfalls met with their fixes. Leave out what only mattered for that session's task.

Rules:
- Answer with the complete new notes: markdown bullets ("- ..."), optionally under "## " headings.
- Every bullet ends with its source as [from SESSION#SEQ]: keep the source of entries you keep; \
a new entry takes the session and seq of the fact it comes from. Keep lines the person wrote \
without a source exactly as they are, unless a newer fact contradicts them.
- When a newer fact contradicts an entry, replace the entry (new text, new source); never keep both.
- Remove entries that no longer hold. Merge duplicates.
- Keep exact commands, paths, names and numbers as written.
- Stay under {budget} tokens: drop the least useful entries first.
- Nothing else: no preamble, no commentary."""


@dataclass(frozen=True)
class Fact:
    seq: int
    text: str


@dataclass(frozen=True)
class CuratedNotes:
    text: str
    entries: int
    dropped: list[str]  # lines refused for lacking a source


class NotesRefused(ValueError):
    """A curated answer with nothing usable in it."""


def session_facts(events: Sequence[Event], since_seq: int = 0, *, limit_chars: int = 600) -> list[Fact]:
    """What a session can teach the notes: the person's own words and the must-keep observations,
    after `since_seq` (what an earlier curation already took)."""
    facts: list[Fact] = []
    for event in events:
        if event.seq <= since_seq:
            continue
        if isinstance(event, UserEvent) and event.text.strip():
            facts.append(Fact(event.seq, event.text.strip()[:limit_chars]))
        elif isinstance(event, ObservationEvent | ReflectionEvent):
            for line in event.text.splitlines():
                if line.startswith("🔴"):
                    facts.append(Fact(event.seq, line[1:].strip()[:limit_chars]))
    return facts


def curator_input(notes: str, session_id: str, facts: Sequence[Fact], budget: int) -> str:
    listed = "\n".join(f"[{session_id}#{f.seq}] {f.text}" for f in facts)
    current = notes.strip() or "(no notes yet)"
    return (f"Existing notes:\n{current}\n\nWhat session {session_id} said and observed "
            f"(source in brackets):\n{listed}\n\nWrite the complete new notes, under {budget} tokens.")


def accept_notes(answer: str, budget: int, *, current: str = "", session_id: str | None = None) -> CuratedNotes:
    """Keep headings and the bullets that can be trusted; cut to the budget from the end.

    A bullet is kept when its source names this session or a session the notes already cite, or
    when it stands word for word in the current notes (a line the person wrote by hand, which
    has no source and must not be lost). Anything else is dropped and reported."""
    known = {sid for sid, _ in sources(current)} | ({session_id} if session_id else set())
    written = {line.strip() for line in entries(current)}
    kept: list[str] = []
    dropped: list[str] = []
    for line in answer.strip().splitlines():
        stripped = line.rstrip()
        if not stripped or stripped.startswith("```"):
            continue
        if stripped.startswith("#"):
            kept.append(stripped)
        elif ENTRY.match(stripped):
            source = PROVENANCE.search(stripped)
            trusted = (source is not None and (not known or source.group(1) in known)) or stripped.strip() in written
            (kept if trusted else dropped).append(stripped)
    if not any(ENTRY.match(line) for line in kept):
        raise NotesRefused("the curator's answer has no sourced entries")
    while estimate_text("\n".join(kept)) > budget and kept:
        kept.pop()
    while kept and kept[-1].startswith("#"):  # a heading left with nothing under it
        kept.pop()
    body = _space_headings(kept)
    return CuratedNotes(HEADER + "\n" + body + "\n", sum(1 for k in kept if ENTRY.match(k)), dropped)


def _space_headings(lines: list[str]) -> str:
    out: list[str] = []
    for line in lines:
        if line.startswith("#") and out:
            out.append("")
        out.append(line)
    return "\n".join(out)


def entries(notes: str) -> list[str]:
    return [line.strip() for line in notes.splitlines() if ENTRY.match(line)]


def sources(notes: str) -> list[tuple[str, int]]:
    """(session id, seq) of every sourced entry, in order."""
    found = []
    for line in entries(notes):
        match = PROVENANCE.search(line)
        if match:
            found.append((match.group(1), int(match.group(2))))
    return found
