"""The curator's reader: the project notes as a model wrote them, turned into the canonical form
(`- text [from SESSION#SEQ]` bullets under `## ` headings) before they are written and logged.

Each entry must be traceable. A source in a near form (`(from S#12)`, `[S#12]`, `source: S#12`,
a unique prefix of the session id) is written the canonical way; an entry with no source takes
the source of the fact it matches (one the session said, or an entry already in the notes); a
line the person wrote by hand is kept exactly as they wrote it. Only an entry that matches
nothing is dropped, and it is reported, rather than the whole answer being refused.

Refused, with the reason: an empty answer, a refusal, one with no entry left, and one cut at
max_tokens (the notes are a complete replacement: a cut answer would silently delete every
entry after the cut).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from scribe.context.tokens import estimate_text

from .answer import Answer, UnusableAnswer, answer_lines, declined, nothing_to_read, without_marker

HEADER = "# Project notes\n\nCurated by scribe from earlier sessions; edit freely. One fact per line.\n"
PROVENANCE = re.compile(r"\[from ([\w-]+)#(\d+)\]\s*$")
ENTRY = re.compile(r"^\s*[-*] ")

_KEYWORD = r"(?:(?:from|source|src|via)\s*:?\s*)?"
# Near forms of a source, found anywhere in an entry (the last one wins): bracketed or in
# parentheses, with or without "from"/"source", or "from X#N" / "source: X#N" bare. A bare
# "X#N" is not one: "issue#12" is text.
_SOURCE = re.compile(
    rf"\[\s*{_KEYWORD}(?P<a>[\w-]+)#(?P<an>\d+)\s*\]"
    rf"|\(\s*{_KEYWORD}(?P<b>[\w-]+)#(?P<bn>\d+)\s*\)"
    r"|\b(?:from|source|src)\s*:?\s*(?P<c>[\w-]+)#(?P<cn>\d+)\b",
    re.IGNORECASE)
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(?P<hash>.+?)\s*#*|\*\*(?P<bold>[^*]+)\*\*:?|__(?P<under>[^_]+)__:?)\s*$")
_WORD = re.compile(r"[\w./`:@+-]+")
_COMMON = frozenset("a an and are as at be by for from in is it of on or our that the this to use uses we with".split())
# An entry without a source matches a fact when this share of its words is in the fact.
MATCH_SHARE = 0.6


class NotesRefused(UnusableAnswer):
    """A curated answer with nothing usable in it."""


@dataclass(frozen=True)
class Fact:
    seq: int
    text: str


@dataclass(frozen=True)
class CuratedNotes:
    text: str
    entries: int
    dropped: list[str]  # entries left out: no source, and nothing they match
    matched: int = 0  # entries without a usable source that took the source of the fact they match


def read_notes(answer: Answer | str, budget: int, *, current: str = "", session_id: str | None = None,
               facts: Sequence[Fact] = ()) -> CuratedNotes:
    """The curator's answer as the notes to write, or NotesRefused with the reason to log."""
    if isinstance(answer, str):
        answer = Answer(answer)
    reason = nothing_to_read(answer)
    if reason:
        raise NotesRefused(reason)
    if answer.cut:
        raise NotesRefused("the curator's answer was cut at max_tokens; written, it would delete every entry "
                           "after the cut")
    known = {sid for sid, _ in sources(current)} | ({session_id} if session_id else set())
    by_hand = [line for line in entries(current) if not PROVENANCE.search(line)]
    written = {without_marker(line)[1]: line for line in by_hand}
    for line in by_hand:
        written.setdefault(_normal(without_marker(line)[1]), line)
    candidates = [(f.text, f"{session_id}#{f.seq}") for f in facts if session_id] + [
        (PROVENANCE.sub("", line).strip(" -*"), f"{m.group(1)}#{m.group(2)}")
        for line in entries(current) if (m := PROVENANCE.search(line))]
    kept: list[str] = []
    dropped: list[str] = []
    matched = 0
    for line in answer_lines(answer):
        if not line.strip() or line.strip() == HEADER.splitlines()[2]:
            continue
        heading = _HEADING.match(line)
        if heading:
            title = (heading.group("hash") or heading.group("bold") or heading.group("under")).strip().rstrip(":")
            if title.lower() != "project notes":
                kept.append(f"## {title}")
            continue
        _, body = without_marker(line)
        if body == line.strip():
            continue  # prose: a preamble or a comment, not an entry
        text, source = _split_source(body, known)
        if source is not None:
            kept.append(f"- {text} [from {source}]")
        elif (own := written.get(body) or written.get(_normal(body)) or written.get(_normal(text))) is not None:
            kept.append(own)  # the person's line, exactly as they wrote it
        elif text and (found := _match(text, candidates)) is not None:
            kept.append(f"- {text} [from {found}]")
            matched += 1
        else:
            dropped.append(line.strip())
    if not any(ENTRY.match(line) for line in kept):
        raise NotesRefused(declined(answer.text) or "the curator's answer has no entry with a source it can be traced to")
    while estimate_text("\n".join(kept)) > budget and kept:
        kept.pop()
    while kept and kept[-1].startswith("#"):  # a heading left with nothing under it
        kept.pop()
    body_text = _space_headings(_no_empty_headings(kept))
    return CuratedNotes(HEADER + "\n" + body_text + "\n", sum(1 for k in kept if ENTRY.match(k)), dropped, matched)


def _split_source(body: str, known: set[str]) -> tuple[str, str | None]:
    """The entry's text without its source, and the source as SESSION#SEQ when it names a session
    the notes may cite (any, when none is known yet); an unusable source stays in the text."""
    found = list(_SOURCE.finditer(body))
    for match in reversed(found):
        sid = match.group("a") or match.group("b") or match.group("c")
        seq = match.group("an") or match.group("bn") or match.group("cn")
        resolved = _resolve(sid, known)
        if resolved is None:
            continue
        before, after = _trim(body[: match.start()]), _trim(body[match.end():])
        return " ".join(part for part in (before, after) if part), f"{resolved}#{int(seq)}"
    return body.strip(), None


def _resolve(sid: str, known: set[str]) -> str | None:
    if not known or sid in known:
        return sid
    near = [k for k in known if k.startswith(sid) or k.endswith(sid)]
    return near[0] if len(near) == 1 and len(sid) >= 6 else None


def _trim(text: str) -> str:
    """Text beside a removed source, without the separators that went with it ("—", ",", ":")."""
    return text.strip().strip("-–—,;:|").strip()


def _match(text: str, candidates: Sequence[tuple[str, str]]) -> str | None:
    """The source of the fact `text` says: one written the same way, else the one holding the
    largest share of its words (at least MATCH_SHARE), the closest in length among equals, the
    newest among those (a later fact replaces an earlier one)."""
    exact = [source for fact, source in candidates if _normal(fact) == _normal(text)]
    if exact:
        return exact[-1]
    words = _words(text)
    if not words:
        return None
    best: tuple[float, float, str] | None = None
    for fact, source in candidates:
        theirs = _words(fact)
        common = len(words & theirs)
        share = common / len(words)
        if share < MATCH_SHARE or (common < 2 and len(words) > 1):
            continue
        score = (share, common / len(words | theirs), source)
        if best is None or score[:2] >= best[:2]:
            best = score
    return best[2] if best else None


def _words(text: str) -> set[str]:
    return {w.strip("`.:,") for w in _WORD.findall(text.lower())} - _COMMON - {""}


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


def _no_empty_headings(lines: list[str]) -> list[str]:
    return [line for i, line in enumerate(lines)
            if not (line.startswith("#") and (i + 1 == len(lines) or lines[i + 1].startswith("#")))]


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
