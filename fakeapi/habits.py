"""A catalogue of model habits: the shapes real models give memory answers (observations,
reflections, curated notes), so tests can hand scribe's readers what a model would really write.

A habit turns what a model means to say (`Said` observations, or notes `Entry` lines) into one
`Reply`, dressed the way that habit dresses it. `rng` varies the details a habit leaves open
(which list marker, which tag decoration, where max_tokens cuts), so a property test can draw
many answers from one habit; without it a habit is deterministic.

    canonical   exactly the shape scribe asks for
    mastra      Mastra's observational memory: <observations>, "Date:" headings,
                "* 🔴 (14:30) ..." with indented "-> ..." sub-items, <current-task>, <suggested-response>
    bulleted    list markers before the tags (- * • 1.), bold or bracketed tags, bold labels
    decorated   the variation selector after every tag, bold and bracketed tags, a heading per priority run
    fenced      the whole answer in a code fence
    windows     CRLF line endings (and the variation selector)
    sectioned   markdown headings, blank lines, a misspelled "Curent task" and "Next steps"
    chatty      a preamble and trailing commentary; notes entries without their sources
    truncated   cut mid-line by max_tokens (stop_reason max_tokens)
    prose       a summary in sentences, no tags, no bullets
    refusal     a refusal sentence with stop_reason refusal
    empty       no text at all
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .script import Reply, text_block

__all__ = ["HABITS", "Entry", "Habit", "Said", "habit"]

VS16 = "\ufe0f"
REFUSAL_TEXT = "I'm sorry, but I can't help with that request."
PROSE_TEXT = ("I looked through this part of the session. The user is working on their project and the "
              "agent ran a few commands, which mostly worked; nothing else stood out.")


@dataclass(frozen=True)
class Said:
    """What an observer or reflector model means to say: tagged lines, in order, and the task lines."""

    lines: tuple[tuple[str, str], ...]  # (tag, text)
    current_task: str | None = None
    next_step: str | None = None


@dataclass(frozen=True)
class Entry:
    """One line a curator means to keep: its text and source ("SESSION#SEQ"; None for a line a
    person wrote), under an optional heading."""

    text: str
    source: str | None = None
    heading: str | None = None


@dataclass(frozen=True)
class Habit:
    name: str
    observations: Callable[[Said, random.Random], Reply]
    notes: Callable[[Sequence[Entry], random.Random], Reply]

    def observe(self, said: Said, rng: random.Random | None = None) -> Reply:
        return self.observations(said, rng or random.Random(0))

    def curate(self, entries: Sequence[Entry], rng: random.Random | None = None) -> Reply:
        return self.notes(entries, rng or random.Random(0))


# -- the canonical shape, which the others dress --------------------------------------------------

def canonical_lines(said: Said) -> list[str]:
    lines = [f"{tag} {text}" for tag, text in said.lines]
    if said.current_task:
        lines.append(f"Current task: {said.current_task}")
    if said.next_step:
        lines.append(f"Next step: {said.next_step}")
    return lines


def canonical_notes_lines(entries: Sequence[Entry]) -> list[str]:
    lines: list[str] = []
    heading: str | None = None
    for entry in entries:
        if entry.heading and entry.heading != heading:
            lines += ([""] if lines else []) + [f"## {entry.heading}"]
            heading = entry.heading
        lines.append(f"- {entry.text} [from {entry.source}]" if entry.source else f"- {entry.text}")
    return lines


def _text(lines: Sequence[str], *, newline: str = "\n") -> Reply:
    return Reply.text(newline.join(lines))


def _canonical(said: Said, rng: random.Random) -> Reply:
    return _text(canonical_lines(said))


def _canonical_notes(entries: Sequence[Entry], rng: random.Random) -> Reply:
    return _text(canonical_notes_lines(entries))


# -- Mastra's observational memory ----------------------------------------------------------------

def _mastra(said: Said, rng: random.Random) -> Reply:
    minutes = rng.randrange(8 * 60, 18 * 60)
    out = ["<observations>", "Date: Dec 4, 2025"]
    for n, (tag, text) in enumerate(said.lines):
        if n and rng.random() < 0.1:
            out.append("Date: Dec 5, 2025")
        head, *children = text.split("; ")
        out.append(f"* {tag} ({minutes // 60:02d}:{minutes % 60:02d}) {head}")
        out += [f"  * -> {child}" for child in children]
        minutes = min(minutes + rng.randrange(0, 4), 23 * 60 + 59)
    out.append("</observations>")
    if said.current_task:
        out += ["", "<current-task>", f"Primary: {said.current_task}", "</current-task>"]
    if said.next_step:
        out += ["", "<suggested-response>", said.next_step, "</suggested-response>"]
    return _text(out)


def _mastra_notes(entries: Sequence[Entry], rng: random.Random) -> Reply:
    return _text([f"* {e.text} (from {e.source})" if e.source else f"* {e.text}" for e in entries])


# -- markers and decorations ----------------------------------------------------------------------

def _decorate_tag(tag: str, rng: random.Random) -> str:
    return rng.choice([tag, tag + VS16, f"**{tag}**", f"[{tag}]", f"**{tag}{VS16}**", f"[{tag}{VS16}]"])


def _bulleted(said: Said, rng: random.Random) -> Reply:
    out = []
    for n, (tag, text) in enumerate(said.lines, start=1):
        marker = rng.choice(["- ", "* ", "• ", f"{n}. "])
        out.append(f"{marker}{_decorate_tag(tag, rng)} {text}")
    if said.current_task:
        out.append(rng.choice(["- **Current task:** ", "**Current Task**: ", "- Current task: "]) + said.current_task)
    if said.next_step:
        out.append(rng.choice(["- **Next step:** ", "**Next Step**: ", "- Next step: "]) + said.next_step)
    return _text(out)


def _bulleted_notes(entries: Sequence[Entry], rng: random.Random) -> Reply:
    out = []
    for n, entry in enumerate(entries, start=1):
        marker = rng.choice(["• ", "* ", "+ ", f"{n}. "])
        if entry.source is None:
            out.append(f"{marker}{entry.text}")
            continue
        source = rng.choice([f"[{entry.source}]", f"(from {entry.source})", f"source: {entry.source}",
                             f"[from {entry.source}]", f"(source: {entry.source})"])
        out.append(f"{marker}{entry.text} {source}" if rng.random() < 0.8 else f"{marker}{source} {entry.text}")
    return _text(out)


def _decorated(said: Said, rng: random.Random) -> Reply:
    out: list[str] = []
    previous = None
    names = {"🔴": "Must keep", "🟡": "Useful", "🟢": "Background", "✅": "Done"}
    for tag, text in said.lines:
        if tag != previous:
            out += ([""] if out else []) + [f"### {tag}{VS16} {names[tag]}"]
            previous = tag
        out.append(f"- {_decorate_tag(tag, rng)} {text}" if rng.random() < 0.5 else f"- {text}")
    out.append("")
    out += [f"**Current task:** {said.current_task}"] if said.current_task else []
    out += [f"**Next step:** {said.next_step}"] if said.next_step else []
    return _text(out)


# -- wrapping -------------------------------------------------------------------------------------

def _fenced(said: Said, rng: random.Random) -> Reply:
    return _text([f"```{rng.choice(['', 'markdown', 'text'])}", *canonical_lines(said), "```"])


def _fenced_notes(entries: Sequence[Entry], rng: random.Random) -> Reply:
    return _text([f"```{rng.choice(['', 'markdown', 'md'])}", *canonical_notes_lines(entries), "```"])


def _windows(said: Said, rng: random.Random) -> Reply:
    lines = [f"{tag}{VS16} {text}" for tag, text in said.lines] + canonical_lines(said)[len(said.lines):]
    return _text(lines, newline="\r\n")


def _windows_notes(entries: Sequence[Entry], rng: random.Random) -> Reply:
    return _text(canonical_notes_lines(entries), newline="\r\n")


def _sectioned(said: Said, rng: random.Random) -> Reply:
    out = ["## Observations", ""]
    for tag, text in said.lines:
        out.append(f"{tag} {text}")
        if rng.random() < 0.2:
            out.append("")
    out += ["", "## Status", ""]
    out += [f"Curent task: {said.current_task}"] if said.current_task else []
    out += [f"Next steps: {said.next_step}"] if said.next_step else []
    return _text(out)


def _sectioned_notes(entries: Sequence[Entry], rng: random.Random) -> Reply:
    lines = ["# Project notes", ""] + [line.replace("## ", "### ", 1) for line in canonical_notes_lines(entries)]
    return _text(lines)


def _chatty(said: Said, rng: random.Random) -> Reply:
    opener = rng.choice(["Here are the observations:", "Sure! Here are the observations from this part of the session:"])
    closer = rng.choice(["Let me know if you'd like more detail on any of these.", "I kept exact paths and numbers."])
    return _text([opener, "", *canonical_lines(said), "", closer])


def _chatty_notes(entries: Sequence[Entry], rng: random.Random) -> Reply:
    body = [f"- {e.text}" for e in entries]  # the habit: sources left off
    return _text(["Here are the updated project notes:", "", *body, "", "I merged duplicates and dropped stale items."])


# -- answers that hold less, or nothing -----------------------------------------------------------

def _cut(lines: Sequence[str], rng: random.Random) -> Reply:
    """The text up to a point inside one of its lines, as max_tokens leaves it."""
    if not lines:
        return Reply([], stop_reason="max_tokens")
    at = rng.randrange(len(lines))
    line = lines[at]
    partial = line[: rng.randrange(1, len(line))] if len(line) > 1 else ""
    text = "\n".join([*lines[:at], partial]) if at else partial
    return Reply([text_block(text)] if text else [], stop_reason="max_tokens")


def _prose(_: object, rng: random.Random) -> Reply:
    return Reply.text(PROSE_TEXT)


def _refusal(_: object, rng: random.Random) -> Reply:
    return Reply([text_block(REFUSAL_TEXT)], stop_reason="refusal")


def _empty(_: object, rng: random.Random) -> Reply:
    return Reply([], stop_reason="end_turn")


HABITS: dict[str, Habit] = {h.name: h for h in (
    Habit("canonical", _canonical, _canonical_notes),
    Habit("mastra", _mastra, _mastra_notes),
    Habit("bulleted", _bulleted, _bulleted_notes),
    Habit("decorated", _decorated, _bulleted_notes),
    Habit("fenced", _fenced, _fenced_notes),
    Habit("windows", _windows, _windows_notes),
    Habit("sectioned", _sectioned, _sectioned_notes),
    Habit("chatty", _chatty, _chatty_notes),
    Habit("truncated", lambda said, rng: _cut(canonical_lines(said), rng),
          lambda entries, rng: _cut(canonical_notes_lines(entries), rng)),
    Habit("prose", _prose, _prose),
    Habit("refusal", _refusal, _refusal),
    Habit("empty", _empty, _empty),
)}


def habit(name: str) -> Habit:
    try:
        return HABITS[name]
    except KeyError:
        raise ValueError(f"unknown habit {name!r}; known: {', '.join(HABITS)}") from None
