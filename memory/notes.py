"""Project notes: the curated memory that outlives a session, kept in `<state>/notes.md`.

A person can read and edit the file. Each entry is one markdown bullet ending with where it
came from, `[from <session-id>#<seq>]`, so every note can be traced to the log line that
taught it. This module is the pure part: what a session contributes and how much of it one
curator request holds; memory/notes_reader.py reads the curator's answer.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from scribe.context.tokens import estimate_text
from scribe.log.chunks import tail_after
from scribe.log.events import Event, ObservationEvent, ReflectionEvent, UserEvent

from .answer import Answer
from .notes_reader import (
    ENTRY,
    HEADER,
    PROVENANCE,
    CuratedNotes,
    Fact,
    NotesRefused,
    entries,
    read_notes,
    sources,
)

MUST_KEEP = "🔴"

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
class SessionFacts:
    """What a session can teach the notes after some seq: its newest facts, as many as fit in the
    tokens asked for, and how many there are in all (the older ones are counted, not kept, so a
    long session's hundreds of thousands of messages are never held at once)."""

    newest: list[Fact]
    count: int
    last_seq: int  # the newest fact's seq; -1 when there is none
    lessons: int = 0  # of the facts, those that teach (`teaches`): none, and nothing is worth curating


def session_facts(events: Sequence[Event], since_seq: int = 0, *, tokens: int,
                  limit_chars: int = 600) -> SessionFacts:
    """The person's own words and the must-keep observations after `since_seq` (what an earlier
    curation already took), of which the newest within `tokens`: `facts_within` of them with
    any budget up to `tokens` is what it would be of every fact."""
    kept: deque[Fact] = deque()
    used = count = lessons = 0
    last = -1
    for event in tail_after(events, since_seq):
        for fact in _facts_of(event, limit_chars):
            count, last = count + 1, fact.seq
            kept.append(fact)
            used += fact_tokens(fact)
            while used > tokens:
                used -= fact_tokens(kept.popleft())
        lessons += teaches(event)
    return SessionFacts(list(kept), count, last, lessons)


def _facts_of(event: Event, limit_chars: int) -> Iterator[Fact]:
    if isinstance(event, UserEvent) and (words := typed(event)):
        yield Fact(event.seq, words[:limit_chars])
    elif isinstance(event, ObservationEvent | ReflectionEvent):
        for line in event.text.splitlines():
            if line.startswith(MUST_KEEP):
                yield Fact(event.seq, line[1:].strip()[:limit_chars])


def typed(event: UserEvent) -> str:
    """What the person wrote in a message: not a slash command's text (scribe's own words), nor
    the files its `@path` words attached after it."""
    if event.extra.get("command"):
        return ""
    attached_at = event.extra.get("attached_at")
    text = event.text[:attached_at] if isinstance(attached_at, int) else event.text
    return text.strip()


# The words by which a person says something meant to last: a preference, a convention, a rule,
# a fact about how "we" work. A message without one ("hello", "fix the failing test") asks for
# work and teaches the notes nothing, so a session of only such messages costs no curator call
# (`/notes curate` curates whatever was said); the observer's must-keep lines teach whatever
# their words. Erring towards yes costs one cheap call the curator may answer with no change.
LASTING = re.compile(r"\b(remember|always|never|don'?t|do not|prefer\w*|instead|from now on|make sure|note that|"
                     r"keep in mind|conventions?|we|we're|our|us|must|should|avoid|rules?)\b", re.IGNORECASE)


def teaches(event: Event) -> bool:
    """Whether `event` holds something worth a curation: a person's words that say something
    meant to last (LASTING), or a must-keep observation."""
    if isinstance(event, UserEvent):
        return LASTING.search(typed(event)) is not None
    if isinstance(event, ObservationEvent | ReflectionEvent):
        return any(line.startswith(MUST_KEEP) for line in event.text.splitlines())
    return False


# "[SESSION#SEQ] " before each fact, and its newline.
FACT_LINE_TOKENS = 12


def fact_tokens(fact: Fact) -> int:
    """What a fact's line takes of the curator's input (estimated)."""
    return estimate_text(fact.text) + FACT_LINE_TOKENS


def fact_line(session_id: str, fact: Fact) -> str:
    return f"[{session_id}#{fact.seq}] {fact.text}"


def curator_input(notes: str, session_id: str, facts: Sequence[Fact], budget: int) -> str:
    listed = "\n".join(fact_line(session_id, f) for f in facts)
    current = notes.strip() or "(no notes yet)"
    return (f"Existing notes:\n{current}\n\nWhat session {session_id} said and observed "
            f"(source in brackets):\n{listed}\n\nWrite the complete new notes, under {budget} tokens.")


def facts_within(facts: Sequence[Fact], tokens: int) -> tuple[list[Fact], int]:
    """The newest facts whose lines fit in `tokens` (estimated), in their order, and how many
    older ones were left out: the notes keep what holds now, and a newer fact replaces an older."""
    kept: list[Fact] = []
    used = 0
    for fact in reversed(facts):
        used += fact_tokens(fact)
        if used > tokens:
            break
        kept.append(fact)
    kept.reverse()
    return kept, len(facts) - len(kept)


def accept_notes(answer: str, budget: int, *, current: str = "", session_id: str | None = None,
                 facts: Sequence[Fact] = ()) -> CuratedNotes:
    """`read_notes` of a plain answer (no stop reason)."""
    return read_notes(Answer(answer), budget, current=current, session_id=session_id, facts=facts)


__all__ = ["CURATOR_SYSTEM", "ENTRY", "HEADER", "PROVENANCE", "CuratedNotes", "Fact", "NotesRefused",
           "SessionFacts", "accept_notes", "curator_input", "entries", "fact_tokens", "facts_within", "read_notes",
           "session_facts", "sources", "teaches"]
