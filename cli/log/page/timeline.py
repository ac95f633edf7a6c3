"""The session's turns as HTML: what the person said, what the model answered and did, what
came back, and what else happened in between (memory, file changes, interrupts, errors).

One fragment per event, grouped by turn (a turn starts at a user event). Every piece of text
from the log goes through text.py (escaped, isolated beside other words, its invisible
characters marked) or the markdown renderer, which escapes too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from typing import Any

from scribe.log.events import (
    AssistantEvent,
    Event,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.images import image_refs
from scribe.log.pricing import LIST_PRICES, PriceBook
from scribe.tools.textio import plural
from scribe.tools.todo import NAME as TODO
from scribe.tools.todo import current_todos, progress

from ..common import local_time, money_or_unpriced, percent
from ..format import EventPrinter, command_of, main_argument
from .markdown import markdown_html
from .memory_map import ChunkSpans
from .text import inline, marked, marked_html
from .thumbnails import Thumbnails

# The page shows this much of one tool output; the rest is counted (the log keeps it whole).
OUTPUT_CHARS = 20_000
# A tool argument longer than this (or of several lines) is folded.
ARG_CHARS = 160
GIST_CHARS = 120
MAIN_KEYS = ("command", "path", "pattern")  # what format.main_argument puts in a call's heading

KIND = {"file_change": "file", "interrupt": "interrupt", "error": "error", "model_switch": "model",
        "git_commit": "git", "git_undo": "git", "notes": "notes", "hook": "hook"}
# The task list's marks on the page (the todo tool's items).
TODO_MARKS = {"pending": "☐", "in_progress": "▶", "done": "✔"}


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def time_tag(ts: str) -> str:
    return f'<time datetime="{esc(ts)}">{esc(local_time(ts, date=False))}</time>'


def seq_link(seq: int) -> str:
    return f'<a class="seq" href="#e-{seq}">#{seq}</a>'


def lines_word(text: str) -> str:
    n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    return f"{n:,} line{'' if n == 1 else 's'}"


def shown_output(text: str, seq: int) -> str:
    """The output as the page shows it: whole, or its head and tail around a count of the rest."""
    if len(text) <= OUTPUT_CHARS:
        return text
    half = OUTPUT_CHARS // 2
    hidden = len(text) - 2 * half
    return (f"{text[:half]}\n[… {hidden:,} characters not shown here; "
            f"`scribe log show --since {seq} --full` prints the whole output …]\n{text[-half:]}")


@dataclass
class Turn:
    number: int  # 0: what came before the first user message
    seq: int
    ts: str
    gist: str
    items: list[str] = field(default_factory=list)
    calls: int = 0
    cost: float | None = 0.0  # None: a call of it is unpriced
    observed_in: int | None = None  # seq of the observation that covers this turn's start
    changed: int = 0  # how many events the timeline had taken in when this turn last changed


class Timeline:
    def __init__(self, prices: PriceBook = LIST_PRICES, thumbnails: Thumbnails | None = None) -> None:
        self.prices = prices
        self.thumbnails = thumbnails or Thumbnails(None)
        self.turns: list[Turn] = [Turn(0, 0, "", "before the first message")]
        self._printer = EventPrinter(None)
        self._calls: dict[str, tuple[str, str]] = {}  # tool_use id -> (tool name, main argument)
        self._todo_args: dict[str, dict[str, Any]] = {}  # tool_use id -> a todo call's input
        self._turn_of: dict[int, int] = {}  # seq -> turn number
        self._spans = ChunkSpans()
        self.added = 0  # events taken in

    def add(self, event: Event) -> None:
        self.added += 1
        if isinstance(event, SessionEvent):
            return  # the page's header shows it
        if isinstance(event, UserEvent):
            gist = next((line for line in event.text.splitlines() if line.strip()), "")
            gist = gist if len(gist) <= GIST_CHARS else gist[:GIST_CHARS - 1] + "…"
            self.turns.append(Turn(len(self.turns), event.seq, event.ts, gist))
        turn = self.turns[-1]
        turn.changed = self.added
        self._turn_of[event.seq] = turn.number
        if isinstance(event, UsageEvent):
            turn.calls += 1
            cost = self.prices.price_usage(event)[0]
            turn.cost = None if turn.cost is None or cost is None else turn.cost + cost
        turn.items.append(self.item(event))

    def item(self, event: Event) -> str:
        if isinstance(event, UserEvent):
            pictures = "".join(self.thumbnails.figure(ref) for ref in image_refs(event.images))
            made = command_of(event)
            by = f' <span class="command">from <code>/{inline(made["name"])}</code></span>' if made else ""
            return self._box(event, "user", "you", f'<div class="plain" dir="auto">{marked(event.text)}</div>'
                                                   f'{pictures}', by)
        if isinstance(event, AssistantEvent):
            return self._assistant(event)
        if isinstance(event, ToolResultEvent):
            return self._result(event)
        if isinstance(event, UsageEvent):
            return self._usage(event)
        if isinstance(event, ObservationEvent | ReflectionEvent):
            return self._memory(event)
        self._printer.learn([event])
        header, _, body = self._printer.describe(event)
        kind = KIND.get(event.type, "other")
        text = "\n".join(line for line, _ in body)
        inner = f'<span class="what">{inline(header)}</span>'
        if text:
            inner += f'<pre class="small">{marked(text)}</pre>'
        return self._box(event, f"note {kind}", event.type or "event", inner)

    def _box(self, event: Event, css: str, kind: str, inner: str, extra: str = "") -> str:
        return (f'<div class="ev {css}" id="e-{event.seq}"><div class="meta"><span class="kind">{esc(kind)}</span> '
                f'{seq_link(event.seq)} {time_tag(event.ts)}{extra}</div>{inner}</div>')

    def _assistant(self, event: AssistantEvent) -> str:
        parts: list[str] = []
        for block in event.content:
            kind = block.get("type")
            if kind == "text":
                text = str(block.get("text", ""))
                if text.strip():
                    parts.append(f'<div class="md" dir="auto">{marked_html(markdown_html(text))}</div>')
            elif kind == "tool_use":
                parts.append(self._tool_call(block))
            elif kind == "thinking":
                parts.append(f'<details class="thinking"><summary>thinking</summary>'
                             f'<pre>{marked(block.get("thinking", ""))}</pre></details>')
            else:
                parts.append(f'<div class="other">({inline(kind)} block)</div>')
        stop = event.stop_reason
        extra = f' <span class="stop">stopped: {inline(stop)}</span>' if stop not in ("tool_use", "end_turn", None) else ""
        return self._box(event, "assistant", "assistant", "".join(parts), extra)

    def _tool_call(self, block: dict[str, Any]) -> str:
        name = str(block.get("name", "?"))
        args = block.get("input")
        argument = main_argument(name, args)
        self._calls[str(block.get("id"))] = (name, argument)
        if name == TODO and isinstance(args, dict):
            self._todo_args[str(block.get("id"))] = args
        rows: list[str] = []
        for key, value in (args.items() if isinstance(args, dict) else [("input", args)]):
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
            if key in MAIN_KEYS and text == argument:
                continue  # the heading shows it whole
            if "\n" in text or len(text) > ARG_CHARS:
                rows.append(f'<details class="arg"><summary><span class="key">{inline(key)}</span> · {lines_word(text)}, '
                            f'{len(text):,} characters</summary><pre>{marked(text)}</pre></details>')
            else:
                rows.append(f'<div class="arg"><span class="key">{inline(key)}</span> <code>{inline(text)}</code></div>')
        return (f'<div class="tool-call"><div class="call-head">→ <b>{inline(name)}</b> <code>{inline(argument)}</code></div>'
                f'{"".join(rows)}</div>')

    def _result(self, event: ToolResultEvent) -> str:
        name, argument = self._calls.get(event.tool_use_id, (event.tool, ""))
        todo = self._todo_args.pop(event.tool_use_id, None)
        items = current_todos([(todo, event.is_error)]) if todo is not None else None
        if items is not None:
            return self._todo(event, items)
        outcome = "error" if event.is_error else "ok"
        if event.exit_code is not None:
            outcome += f", exit {event.exit_code}"
        dropped = f" · {event.dropped_bytes:,} bytes dropped from the middle" if event.dropped_bytes else ""
        css = "ev result err" if event.is_error else "ev result"
        return (f'<details class="{css}" id="e-{event.seq}"><summary><span class="kind">← {inline(name)}</span> '
                f'<code>{inline(argument)}</code> · {esc(outcome)} · {event.duration_ms:,} ms · {lines_word(event.output)}'
                f'{dropped} {seq_link(event.seq)}</summary>'
                f'<pre class="out">{marked(shown_output(event.output, event.seq)) or "(no output)"}</pre></details>')

    def _todo(self, event: ToolResultEvent, items: list[Any]) -> str:
        """A todo call's list as a checklist (the log keeps its text too)."""
        rows = "".join(f'<li class="todo-{esc(i.status)}"><span class="mark">{TODO_MARKS[i.status]}</span> '
                       f'{inline(i.text)}</li>' for i in items)
        head = f"tasks · {inline(progress(items))}" if items else "tasks · cleared"
        return (f'<div class="ev result todo" id="e-{event.seq}"><div class="meta"><span class="kind">← todo</span> '
                f'{seq_link(event.seq)} {time_tag(event.ts)}</div><div class="what">{head}</div>'
                f'<ul class="todo-list">{rows}</ul></div>')

    def _usage(self, event: UsageEvent) -> str:
        prompt, hit = event.tokens.prompt_tokens, event.tokens.hit_rate
        cost = self.prices.price_usage(event)[0]
        return (f'<a class="ev usage p-{esc(event.purpose)}" id="e-{event.seq}" href="#call-{event.seq}">'
                f'{esc(event.purpose)} call · {prompt:,} prompt tokens, {percent(hit)} from the cache · '
                f'{event.output:,} out · {money_or_unpriced(cost)} · {event.latency_ms:,} ms</a>')

    def _memory(self, event: ObservationEvent | ReflectionEvent) -> str:
        span = self._spans.add(event) or (-1, -1)
        if isinstance(event, ObservationEvent):
            what, covers = "observation", ""
        else:
            what = "reflection"
            covers = " · replaces " + ", ".join(f'<a href="#e-{s}">#{s}</a>' for s in event.supersedes)
        turns = sorted({self._turn_of[s] for s in span if s in self._turn_of})
        if isinstance(event, ObservationEvent):
            for turn in self.turns:
                if span[0] <= turn.seq <= span[1] and turn.observed_in is None:
                    turn.observed_in = event.seq
                    turn.changed = self.added
        where = ""
        if span[0] >= 0:
            where = f' · covers events <a href="#e-{span[0]}">#{span[0]}</a>–<a href="#e-{span[1]}">#{span[1]}</a>'
            if turns:
                where += f" (turn{'s' if len(turns) > 1 else ''} {'–'.join(str(t) for t in turns)})"
        extra = f"{where}{covers} · {event.tokens:,} tokens · {inline(event.model)}"
        body = f'<details class="memory-text" open><summary>its text</summary><pre>{marked(event.text)}</pre></details>'
        return self._box(event, f"memory {what}", what, body, extra)

    def turn_html(self, turn: Turn) -> str:
        if turn.number == 0:
            return f'<div class="turn-0" id="turn-0">{"".join(turn.items)}</div>'
        observed = (f' <a class="observed" href="#e-{turn.observed_in}">observed in #{turn.observed_in}</a>'
                    if turn.observed_in is not None else "")
        # a turn with no model call (cancelled before one) has no cost to show, not a cost of $0
        cost = f"{plural(turn.calls, 'call')} · {money_or_unpriced(turn.cost)}" if turn.calls else "no model call"
        return (f'<details class="turn" id="turn-{turn.number}" open><summary><span class="turn-no">Turn {turn.number}</span> '
                f'{time_tag(turn.ts)} <span class="gist">{inline(turn.gist)}</span> <span class="turn-cost">'
                f'{cost}</span>{observed}</summary>{"".join(turn.items)}</details>')

    def html(self) -> str:
        return "".join(self.turn_html(turn) for turn in self.turns if turn.items)

    def changed_since(self, added: int) -> list[tuple[str, str]]:
        """(element id, html) of the turns that changed after the first `added` events, in order."""
        return [(f"turn-{turn.number}", self.turn_html(turn)) for turn in self.turns
                if turn.items and turn.changed > added]
