"""Events as a readable transcript, for `scribe log show` and `scribe log tail`.

Each event is a header line `[seq] what` and, when it carries text, indented body lines. Tool
outputs are folded to their first and last lines unless `full` is asked for. Everything printed
passes through `visible`: the log keeps tool output, file names and model text byte for byte,
and their control characters are shown here, never obeyed by the terminal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from scribe.log.codec import to_record
from scribe.log.events import (
    AssistantEvent,
    ContextWindowEvent,
    ErrorEvent,
    Event,
    FileChangeEvent,
    GitCommitEvent,
    GitConfigEvent,
    GitUndoEvent,
    HookEvent,
    InterruptEvent,
    LeftOutEvent,
    ModelSwitchEvent,
    NotesEvent,
    NoToolsEvent,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UndoEvent,
    UnknownEvent,
    UsageEvent,
    UserEvent,
)
from scribe.tools.textio import plural
from scribe.workspace.git.planted import describe

from ..visible import visible
from .common import local_time

FOLD_HEAD, FOLD_TAIL = 4, 4  # lines kept of a folded output
LINE_CHARS = 400  # a longer line is cut when folding
INDENT = "    "
GIST_CHARS = 160  # an event told in one line is cut here

STYLE = {"user": "bold green", "assistant": "bold blue", "tool_use": "cyan", "tool_result": "cyan",
         "error": "bold red", "interrupt": "yellow", "observation": "magenta", "reflection": "magenta",
         "file_change": "yellow", "usage": "dim", "session": "bold", "dim": "dim"}


def main_argument(name: str, args: Any) -> str:
    """The argument that says what a tool call does: its path, command or pattern."""
    if not isinstance(args, dict):
        return ""
    parts = []
    for key in ("command", "path", "pattern"):
        value = args.get(key)
        if isinstance(value, str) and value:
            value = visible(value)  # before splitting: a lone CR is shown, not a line break
            first = value.strip().splitlines()[0] if value.strip() else value
            parts.append(first[:120] + (" …" if len(first) > 120 or "\n" in value.strip() else ""))
    if parts:
        return " ".join(parts)
    if not args:
        return ""
    text = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= 120 else text[:119] + "…"


def fields_text(event: Event) -> str:
    """An event with no display of its own (git_commit, ...): one `name: value` line per field."""
    record = {k: v for k, v in to_record(event).items() if k not in ("v", "seq", "ts", "type")}
    return "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                     for k, v in record.items())


def lines_of(text: str) -> list[str]:
    """The lines of a text from the log, shown visibly first: str.splitlines would also break at
    a lone CR (and other controls), which is to be seen, not obeyed."""
    return visible(text).splitlines()


def fold(text: str, full: bool) -> list[str]:
    """Lines of `text`; unless `full`, the first and last few with a count of the hidden ones."""
    lines = lines_of(text) or [""]
    if full:
        return lines
    if len(lines) > FOLD_HEAD + FOLD_TAIL + 1:
        hidden = len(lines) - FOLD_HEAD - FOLD_TAIL
        lines = [*lines[:FOLD_HEAD], f"… {hidden} more lines (--full shows all) …", *lines[-FOLD_TAIL:]]
    return [line if len(line) <= LINE_CHARS else f"{line[:LINE_CHARS]}… ({len(line) - LINE_CHARS} more characters)"
            for line in lines]


def command_of(event: UserEvent) -> dict[str, Any] | None:
    """The slash command a user event's text came from (a custom command, /init), if any."""
    made = event.extra.get("command")
    return made if isinstance(made, dict) and isinstance(made.get("name"), str) else None


def hook_line(event: HookEvent) -> str:
    """`hook pre_tool_use run_command · `guard.sh` (yours) · blocked, exit 2 · 12 ms`."""
    tool = event.extra.get("tool")
    on = f" {tool}" if isinstance(tool, str) else ""
    whose = "yours" if event.owner == "person" else f"the {event.owner}'s"
    code = f", exit {event.exit_code}" if event.exit_code is not None else ""
    return f"hook {event.hook}{on} · `{event.command}` ({whose}) · {event.outcome}{code} · {event.duration_ms} ms"


class EventPrinter:
    """Prints events to a rich console, one header line and an indented body each."""

    def __init__(self, console: Any, *, full: bool = False) -> None:
        self.console = console
        self.full = full
        self.tools: dict[str, str] = {}  # tool_use id -> tool name, to label results and interrupts

    def learn(self, events: Sequence[Event], only: set[str] | None = None) -> None:
        """Note tool names from events that are not printed (filtered out, or before a tail);
        with `only`, of those tool_use ids alone."""
        for event in events:
            if isinstance(event, AssistantEvent):
                for block in event.content:
                    if block.get("type") == "tool_use" and (only is None or str(block.get("id")) in only):
                        self.tools[str(block.get("id"))] = str(block.get("name", "?"))

    def __call__(self, event: Event) -> None:
        from rich.text import Text

        header, style, body = self.describe(event)
        line = Text(f"[{event.seq}] ", style="dim")
        line.append(visible(header), style=STYLE.get(style, ""))
        self.console.print(line, soft_wrap=True)
        for text, body_style in body:
            self.console.print(Text(INDENT + visible(text), style=STYLE.get(body_style, "")), soft_wrap=True)

    def gist(self, event: Event, chars: int = GIST_CHARS) -> str:
        """The event in one line: its header and the first line of its body, cut to `chars`
        (what a compression replaced, event by event: `log show --compressions`, the page)."""
        header, _, body = self.describe(event)
        first = next((text.strip() for text, _ in body if text.strip()), "")
        line = f"{header} · {first}" if first else header
        return line if len(line) <= chars else line[:chars - 1] + "…"

    def describe(self, event: Event) -> tuple[str, str, list[tuple[str, str]]]:
        """(header, its style, [(body line, style)])."""
        when = local_time(event.ts, date=False)
        if isinstance(event, SessionEvent):
            where = f" · {event.git_branch or '?'} @ {(event.git_head or '?')[:10]}" if event.git_head else ""
            return (f"session {event.id} · {event.model} · {event.cwd}{where} · scribe {event.scribe_version} · "
                    f"{local_time(event.created)}", "session", [])
        if isinstance(event, UserEvent):
            made = command_of(event)
            by = f" · from /{made['name']}" + (f" ({made['file']})" if made.get("file") else "") if made else ""
            return f"user · {when}{by}", "user", [(t, "") for t in lines_of(event.text) or [""]]
        if isinstance(event, AssistantEvent):
            return self._assistant(event, when)
        if isinstance(event, ToolResultEvent):
            outcome = "error" if event.is_error else "ok"
            if event.exit_code is not None:
                outcome += f", exit {event.exit_code}"
            dropped = f" · {event.dropped_bytes} bytes dropped from the middle" if event.dropped_bytes else ""
            header = f"← {event.tool} {outcome} · {event.duration_ms} ms · {len(event.output)} chars{dropped}"
            return header, "error" if event.is_error else "tool_result", [(t, "") for t in fold(event.output, self.full)]
        if isinstance(event, UsageEvent):
            return (f"usage · {event.purpose} · {event.model} · input {event.input} · cache read {event.cache_read}"
                    f" · cache write {event.cache_write} · output {event.output} · {event.latency_ms} ms", "usage", [])
        if isinstance(event, ObservationEvent):
            return (f"observation of events {event.seq_from}-{event.seq_to} · {event.tokens} tokens · {event.model}",
                    "observation", [(t, "") for t in lines_of(event.text)])
        if isinstance(event, ReflectionEvent):
            replaced = ", ".join(str(s) for s in event.supersedes)
            return (f"reflection replacing {replaced} · {event.tokens} tokens · {event.model}", "reflection",
                    [(t, "") for t in lines_of(event.text)])
        if isinstance(event, GitCommitEvent):
            subject = event.message.strip().splitlines()[0] if event.message.strip() else ""
            skipped = [(f"left out {path}: {why}", "dim") for path, why in event.skipped.items()]
            return (f"git commit {event.sha[:10]} · {subject} · {', '.join(event.files)}", "session", skipped)
        if isinstance(event, GitUndoEvent):
            return (f"git undo of {event.sha[:10]} · HEAD back at {event.head[:10]} · {', '.join(event.files)}",
                    "session", [])
        if isinstance(event, GitConfigEvent):
            return describe(event.changes, event.hook), "error", []
        if isinstance(event, UndoEvent):
            removed = f" · removed {', '.join(event.removed)}" if event.removed else ""
            return (f"undo of the turn at seq {event.turn} · {', '.join(event.files)}{removed}", "session", [])
        if isinstance(event, NotesEvent):
            return (f"notes curated · {plural(event.entries, 'entry', 'entries')} · {event.path} · {event.model}",
                    "observation",
                    [(t, "") for t in fold(event.text, self.full)])
        if isinstance(event, FileChangeEvent):
            what = f"moved to {event.dest}" if event.kind == "moved" and event.dest else event.kind
            if event.kind == "many":
                what = f"and {event.count} more changes under it"
            stale = " (it changed since scribe last read it)" if event.stale else ""
            during = " while scribe's command ran" if event.during_command else ""
            return f"file changed outside scribe: {event.path} {what}{stale}{during}", "file_change", []
        if isinstance(event, ModelSwitchEvent):
            return f"model switched to {event.model} (the next call writes its prompt cache anew)", "session", []
        if isinstance(event, ContextWindowEvent):
            said = "the server reports" if event.source == "server" else "a refused request named"
            return f"context window {event.tokens:,} tokens · {said} it · {event.model}", "session", []
        if isinstance(event, NoToolsEvent):
            said = "the server reports it" if event.source == "server" else "an answer wrote a tool call as text"
            return f"no tools for {event.model} · {said}", "error", [(event.detail, "dim")] if event.detail else []
        if isinstance(event, LeftOutEvent):
            return (f"events {event.seq_from}-{event.seq_to} left out of later requests · {event.tokens:,} tokens "
                    f"for a {event.window:,}-token window", "error", [(event.reason, "dim")])
        if isinstance(event, HookEvent):
            return hook_line(event), "error" if event.outcome in ("blocked", "failed", "timeout") else "dim", [
                *((f"stderr: {t}", "dim") for t in fold(event.stderr, self.full) if event.stderr),
                *((f"shown to the model: {t}", "") for t in fold(event.feedback, self.full) if event.feedback)]
        if isinstance(event, InterruptEvent):
            calls = ", ".join(f"{self.tools.get(i, '?')} {i}" for i in event.tool_use_ids) or "no open tool calls"
            return f"interrupt · {event.reason} · {calls}", "interrupt", []
        if isinstance(event, ErrorEvent):
            body = [(t, "dim") for t in fold(str(event.extra["torn"]), self.full)] if "torn" in event.extra else []
            return f"error ({event.kind}) · {event.message}", "error", body
        if isinstance(event, UnknownEvent):
            text = json.dumps(event.extra, ensure_ascii=False)
            return f"{event.type_name} (a type this scribe does not know)", "dim", [(t, "dim") for t in fold(text, self.full)]
        return event.type, "", [(t, "") for t in fold(fields_text(event), self.full)]

    def _assistant(self, event: AssistantEvent, when: str) -> tuple[str, str, list[tuple[str, str]]]:
        body: list[tuple[str, str]] = []
        for block in event.content:
            kind = block.get("type")
            if kind == "text":
                body += [(t, "") for t in lines_of(str(block.get("text", "")))]
            elif kind == "tool_use":
                name = str(block.get("name", "?"))
                self.tools[str(block.get("id"))] = name
                body.append((f"→ {name} {main_argument(name, block.get('input'))}".rstrip(), "tool_use"))
            elif kind == "thinking":
                body += [(t, "dim") for t in fold(str(block.get("thinking", "")), self.full)]
            else:
                body.append((f"({kind} block)", "dim"))
        stop = f" · {event.stop_reason}" if event.stop_reason not in ("tool_use", "end_turn", None) else ""
        return f"assistant · {when}{stop}", "assistant", body
