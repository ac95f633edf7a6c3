"""Observation text: its one canonical form, and the tolerant reader that reaches it from
whatever shape an observer or reflector model used.

The canonical form, the only one that enters the log (so renders stay byte-stable):

    🔴 one observation per line, its priority tag, one space, the text
    🟡 ...
    Current task: ...
    Next step: ...

The reader keeps every tagged line, in order, with its tag, and writes nothing the model did not
say. It accepts list markers before the tag, bold or bracketed tags, the emoji with or without
its variation selector, headings and preambles (dropped), a heading that carries a tag for the
items under it, Mastra's shape (`Date:` headings, `* 🔴 (14:30) ...`, indented sub-items,
`<current-task>` and `<suggested-response>` blocks), a misspelled "Current task"/"Next step"
label, CRLF, and a last line cut by max_tokens (left out).

Time stamps such as `(14:30)` at the start of an observation are dropped: the observer's input
holds seq numbers, not clock times, so any time it writes is made up; when an observation was
made is in its event's `ts`, and what it covers in its seq range.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from .answer import (
    Answer,
    UnusableAnswer,
    answer_lines,
    declined,
    nothing_to_read,
    unfinished_line,
    without_marker,
)

TAGS = ("🔴", "🟡", "🟢", "✅")
VARIATION_SELECTOR = "\ufe0f"
TASK_LABEL = "Current task"
NEXT_LABEL = "Next step"

_TAG = "|".join(TAGS)
# A tag as models write it: bare, bold (**🔴**), italic, bracketed ([🔴], (🔴)) or in backticks,
# with or without the variation selector, then an optional ":" or "-" before the text.
_SEP = r"(?:[:\-–—]\s+|->\s*)?"
_TAGGED = re.compile(rf"^(?P<tag>{_TAG}){VARIATION_SELECTOR}?\s*{_SEP}(?P<rest>.*)$")
_WRAPPED = re.compile(rf"^(?P<open>\*\*|__|\*|_|\[|\(|`)\s*(?P<tag>{_TAG}){VARIATION_SELECTOR}?\s*"
                      rf"(?P<close>\*\*|__|\*|_|\]|\)|`)?\s*{_SEP}(?P<rest>.*)$")
_CLOSER = {"**": "**", "__": "__", "*": "*", "_": "_", "[": "]", "(": ")", "`": "`"}
# The legend's words repeated after the tag ("🔴 High: ...", "✅ Done - ...").
_PRIORITY_WORD = re.compile(r"^(?:high|medium|low|must keep|useful|background|done)(?:\s+priority)?\s*[:\-–—]\s+",
                            re.IGNORECASE)
_TIME = re.compile(r"^[(\[]?\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?[)\]]?\s*(?:[:\-–—]\s+)?", re.IGNORECASE)
# "Current task: x", "**Current task:** x", "**Current task**: x", "**Current task: x**", "## Next step - x".
_EM = r"(?:\*\*|__|\*|_)"
_LABELLED = re.compile(rf"^[#>\s]*(?P<em>{_EM})?\s*(?P<label>[A-Za-z][A-Za-z _-]{{0,30}}?)\s*(?P<close>{_EM})?\s*"
                       rf"(?::|\s[-–—]\s)\s*(?P<after>{_EM})?\s*(?P<value>.*)$")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(?P<hash>.*?)\s*#*|\*\*(?P<bold>[^*]+)\*\*:?)\s*$")
_XML = re.compile(r"^\s*<(?P<close>/)?(?P<name>[A-Za-z][\w-]*)\s*>(?P<inline>.*?)(?:</(?P=name)>)?\s*$")
_ARROW = re.compile(r"^(?:->|→|=>)\s*")
# Blocks that hold the current task or the next step, by their XML or heading name. Mastra's
# <suggested-response> (the agent's next message) stands for the next step when none is given.
_BLOCKS = {"current task": "task", "current tasks": "task", "task": "task", "next step": "next",
           "next steps": "next", "suggested response": "suggested"}
_SECTION_WORDS = {"", "critical", "important", "high", "medium", "low", "high priority", "medium priority",
                  "low priority", "must keep", "useful", "background", "done", "completed", "finished"}


@dataclass(frozen=True)
class Observation:
    tag: str
    text: str

    @property
    def line(self) -> str:
        return f"{self.tag} {self.text}"


@dataclass(frozen=True)
class Observations:
    """What an answer said, in the canonical form (`text`)."""

    lines: tuple[Observation, ...]
    current_task: str | None = None
    next_step: str | None = None
    cut: bool = False  # max_tokens stopped the model; its unfinished last line was left out
    ignored: int = 0  # lines that were neither observations nor the task lines (preamble, headings, commentary)

    @property
    def text(self) -> str:
        out = [o.line for o in self.lines]
        if self.current_task:
            out.append(f"{TASK_LABEL}: {self.current_task}")
        if self.next_step:
            out.append(f"{NEXT_LABEL}: {self.next_step}")
        return "\n".join(out)


def read_observations(answer: Answer | str) -> Observations:
    """The observations an answer holds, or UnusableAnswer with the reason to log."""
    if isinstance(answer, str):
        answer = Answer(answer)
    reason = nothing_to_read(answer)
    if reason:
        raise UnusableAnswer(reason)
    reader = _Reader()
    for line in answer_lines(answer):
        reader.feed(line)
    reader.flush_block()
    if not reader.lines:
        if answer.cut:
            raise UnusableAnswer("the answer was cut at max_tokens before its first complete observation")
        raise UnusableAnswer(declined(answer.text) or "the answer has no tagged observation lines")
    suggested = reader.suggested if reader.next_step is None else None
    return Observations(tuple(Observation(t, x) for t, x in reader.lines), reader.current_task,
                        reader.next_step or suggested, unfinished_line(answer), reader.ignored)


class _Reader:
    """One pass over the lines, remembering just enough context: the tag a heading gave the
    items under it, the observation an indented sub-item belongs to, the block being read."""

    def __init__(self) -> None:
        self.lines: list[list[str]] = []
        self.current_task: str | None = None
        self.next_step: str | None = None
        self.suggested: str | None = None
        self.ignored = 0
        self._section_tag: str | None = None
        self._parent = False  # the previous line was an observation that sub-items may extend
        self._block: str | None = None  # "task", "next" or "suggested" while inside such a block
        self._block_xml = False  # the block ends at its closing tag (else at a blank line or heading)
        self._block_lines: list[str] = []

    def feed(self, line: str) -> None:
        if not line.strip():
            self._parent = False
            if self._block and not self._block_xml:
                self.flush_block()
            return
        xml = _XML.match(line)
        if xml:
            self._xml(xml)
            return
        heading = _HEADING.match(line)
        if self._block and heading and not self._block_xml:
            self.flush_block()
        if self._block:
            self._block_lines.append(line)
            return
        indent, body = without_marker(line)
        tagged = _tagged(body)
        if tagged is not None:
            self._observe(*tagged)
        elif heading:
            self._heading((heading.group("hash") or heading.group("bold") or "").strip())
        elif (labelled := _label(body)) is not None:
            self._set(*labelled)
            self._parent = False
        elif self._parent and (indent > 0 or _ARROW.match(body)):
            child = _ARROW.sub("", body).strip()
            if child:
                self.lines[-1][1] = f"{self.lines[-1][1]}; {child}"
        elif self._section_tag and body != line.lstrip():  # a list item under a tagged heading
            self._observe(self._section_tag, body)
        else:
            self.ignored += 1
            self._parent = False

    def flush_block(self) -> None:
        if self._block:
            parts = [_unlabel_primary(without_marker(line)[1]) for line in self._block_lines]
            self._set(self._block, "; ".join(p for p in parts if p))
        self._block, self._block_xml, self._block_lines = None, False, []

    def _observe(self, tag: str, text: str) -> None:
        text = _clean_text(text)
        if text:
            self.lines.append([tag, text])
            self._parent = True
        else:
            self.ignored += 1

    def _xml(self, match: re.Match[str]) -> None:
        self._parent = False
        if match.group("close"):
            if self._block_xml:
                self.flush_block()
            return
        self.flush_block()
        kind = _BLOCKS.get(_words(match.group("name")))
        if kind is None:  # <observations> and the like: a wrapper, not content
            return
        inline = match.group("inline").strip()
        self._block, self._block_xml, self._block_lines = kind, True, [inline] if inline else []
        if match.group(0).rstrip().endswith(f"</{match.group('name')}>"):
            self.flush_block()

    def _heading(self, title: str) -> None:
        self._parent = False
        tagged = _tagged(title)
        if tagged is not None:
            if _words(tagged[1].strip(" :*")) in _SECTION_WORDS:
                self._section_tag = tagged[0]  # "## 🔴 Must keep": the items under it carry the tag
            else:
                self._section_tag = None
                self._observe(*tagged)  # "## 🔴 The user wants X": an observation written as a heading
            return
        self._section_tag = None
        kind = _BLOCKS.get(_words(title.rstrip(":"))) or _label_kind(title.rstrip(":"))
        if kind is not None:
            self._block, self._block_xml, self._block_lines = kind, False, []
        else:
            self.ignored += 1

    def _set(self, kind: str, value: str) -> None:
        value = value.strip()
        if not value:
            return
        if kind == "task":
            self.current_task = value
        elif kind == "next":
            self.next_step = value
        else:
            self.suggested = value


def _tagged(body: str) -> tuple[str, str] | None:
    """(tag, text) when `body` starts with a tag, bare or wrapped (**🔴**, [🔴], `🔴`, and
    "**🔴 the whole line bold**"); None otherwise."""
    match = _TAGGED.match(body)
    if match:
        return match.group("tag"), match.group("rest")
    match = _WRAPPED.match(body)
    if not match:
        return None
    rest = match.group("rest")
    end = _CLOSER[match.group("open")]
    if match.group("close") is None and rest.endswith(end):  # the closer is at the end of the line
        rest = rest[: -len(end)]
    elif match.group("close") not in (None, end):
        return None  # "[🔴)": not a wrapper this reader knows
    return match.group("tag"), rest


def _clean_text(text: str) -> str:
    """The text of an observation: the legend's priority word and a leading time stamp dropped,
    the rest exactly as written (inner spacing too: it can be part of an exact detail)."""
    text = _PRIORITY_WORD.sub("", text.strip(), count=1)
    return _TIME.sub("", text, count=1).strip()


def _words(text: str) -> str:
    return " ".join(text.lower().replace("_", " ").replace("-", " ").split())


def _label(body: str) -> tuple[str, str] | None:
    match = _LABELLED.match(body)
    if not match:
        return None
    kind = _label_kind(match.group("label"))
    if kind is None:
        return None
    em, after, value = match.group("em"), match.group("after"), match.group("value")
    if em and em not in (match.group("close"), after) and value.endswith(em):
        value = value[: -len(em)]  # the whole line was emphasised, closing at its end
    elif after and not em:
        value = after + value  # emphasis that belongs to the value itself
    return kind, value


def _label_kind(label: str) -> str | None:
    """"task" or "next" for a label close to "Current task" or "Next step" (any case, a typo,
    a plural), else None."""
    words = _words(label)
    if words in ("current task", "current tasks", "task", "current focus", "primary task"):
        return "task"
    if words in ("next step", "next steps", "next", "next action"):
        return "next"
    if difflib.SequenceMatcher(None, words, "current task").ratio() >= 0.88:
        return "task"
    if difflib.SequenceMatcher(None, words, "next step").ratio() >= 0.88:
        return "next"
    return None


def _unlabel_primary(text: str) -> str:
    """Mastra's task block says "Primary: ..." and "Secondary: ..."; the first label adds nothing."""
    match = re.match(r"^\s*primary\s*:\s*", text, re.IGNORECASE)
    return (text[match.end():] if match else text).strip()
