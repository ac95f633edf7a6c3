"""recall: read the session's own raw log back: events whole by seq range, lines across the log
by search, or part of one event (a range of its lines, or its lines that match a pattern, with
context).

Observations compress old events and the prompt shows a long output only as a preview (its
head, and its tail where the end matters, under a line naming its seq); the log keeps
everything. This tool is how an exact detail (a line of code written early on, an error
message, line 1,500 of a long output) comes back into view. An event's lines are its text's
lines as `str.splitlines` cuts them, numbered from 1: the numbering a preview gives.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Any

from scribe.log.images import image_refs
from scribe.tools.base import ToolContext, ToolError, ToolKind, ToolOutput
from scribe.tools.pattern import BoundedPattern, PatternError, PatternTooSlow, cut_note

# One answer is bounded like any tool output; a narrower query or range reads further.
MAX_CHARS = 40_000
MAX_MATCH_LINES = 200
# Lines one answer reads of one event, as read_file reads of a file.
MAX_LINES = 2_000
# Lines shown before and after each line a query finds in one event.
CONTEXT = 2
_RANGE = re.compile(r"\s*(\d+)\s*(?:(-)\s*(\d*)\s*)?")


class Recall:
    name = "recall"
    kind: ToolKind = "read"
    description = (
        "Read this session's log back exactly. seq and lines (\"1500-1600\"): those lines of one "
        "event (a preview names its seq). seq and query: its matching lines, with context. seq, or "
        "seq_from/seq_to (inclusive): events whole. query alone (regex, or words that must all appear): "
        "matching lines. session: a sub-agent's log instead (its task result names it)."
    )
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Regex or words to find."},
            "seq": {"type": "integer", "minimum": 0},
            "lines": {"type": "string"},
            "seq_from": {"type": "integer", "minimum": 0},
            "seq_to": {"type": "integer", "minimum": 0},
            "session": {"type": "string"},
        },
        "required": [],
        "additionalProperties": False,
    }

    def summary(self, args: dict[str, Any]) -> str:
        parts = []
        if args.get("query"):
            parts.append(repr(args["query"]))
        if args.get("seq") is not None:
            parts.append(f"seq {args['seq']}" + (f" lines {args['lines']}" if args.get("lines") else ""))
        if args.get("seq_from") is not None or args.get("seq_to") is not None:
            parts.append(f"seq {args.get('seq_from', '')}-{args.get('seq_to', '')}")
        return " ".join(parts) or "(nothing)"

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if ctx.read_log is None:
            raise ToolError("recall is not available: this session has no log")
        if args.get("session"):
            ctx = _child(ctx, str(args["session"]))
        query, lo, hi = args.get("query"), args.get("seq_from"), args.get("seq_to")
        seq, lines = args.get("seq"), args.get("lines")
        if seq is not None:
            if lo is not None or hi is not None:
                raise ToolError("give seq (one event) or seq_from/seq_to (a range of events), not both")
            return ToolOutput(_part(_event(ctx, int(seq)), ctx, query or None, lines))
        if lines is not None:
            raise ToolError("lines reads part of one event: give its seq too")
        if not query and lo is None and hi is None:
            raise ToolError("recall needs a query, a seq range (seq_from, seq_to), or both")
        if ctx.read_log is None:
            raise ToolError("recall reads a session's log, and this call has none")
        # Streamed, never a list of the whole log: a long session's older events are in its file.
        records: Iterable[dict[str, Any]] = (r for r in ctx.read_log() if r.get("type") not in ("session", "usage"))
        if lo is not None or hi is not None:
            first, last = lo if lo is not None else 0, hi if hi is not None else (lo if lo is not None else 0)
            if query is None and hi is None:
                last = first
            records = (r for r in records if first <= int(r.get("seq", -1)) <= last)
        if not query:
            return ToolOutput(_joined(_whole(r, ctx) for r in records))
        matcher = _matcher(query, ctx.regex_timeout_s)
        try:
            found = _search(records, matcher)
        except PatternTooSlow as exc:
            raise ToolError(str(exc)) from None
        if isinstance(matcher, BoundedPattern) and matcher.cut:
            found += f"\n… {cut_note(matcher.cut)}"
        return ToolOutput(_bounded(found))


def _child(ctx: ToolContext, session: str) -> ToolContext:
    """The context with a sub-agent's log to read in place of this session's."""
    reader = ctx.read_child_log(session) if ctx.read_child_log is not None else None
    if reader is None:
        raise ToolError(f"no sub-agent session {session!r} of this session: give the id a task result names")
    return dataclasses.replace(ctx, read_log=reader)


def _event(ctx: ToolContext, seq: int) -> dict[str, Any]:
    assert ctx.read_log is not None
    found = next((r for r in ctx.read_log() if r.get("seq") == seq), None)
    if found is None or found.get("type") in ("session", "usage"):
        raise ToolError(f"no event {seq} to read in this session's log")
    return found


def _part(record: dict[str, Any], ctx: ToolContext, query: str | None, lines: Any) -> str:
    """One event: whole, a range of its lines, or (with `query`) its lines that match, within the range."""
    if query is None and lines is None:
        return _joined([_whole(record, ctx)])
    text = _text_of(record).splitlines()
    first, last = _line_range(lines, len(text), record["seq"]) if lines is not None else (1, len(text))
    head = _heading(record)
    if query is None:
        return _numbered(head, text, first, last)
    matcher = _matcher(query, ctx.regex_timeout_s)
    try:
        found = _matching(head, text, first, last, matcher, query)
    except PatternTooSlow as exc:
        raise ToolError(str(exc)) from None
    if isinstance(matcher, BoundedPattern) and matcher.cut:
        found += f"\n… {cut_note(matcher.cut)}"
    return _bounded(found)


def _line_range(lines: Any, total: int, seq: int) -> tuple[int, int]:
    """"1500-1600", "1500-" or "1500" as (first, last), both within the event's `total` lines."""
    match = _RANGE.fullmatch(str(lines)) if isinstance(lines, (str, int)) and not isinstance(lines, bool) else None
    if match is None:
        raise ToolError(f"lines must be first-last, as \"1500-1600\" (got {json.dumps(lines)})")
    first = int(match.group(1))
    last = int(match.group(3)) if match.group(3) else (total if match.group(2) else first)
    if first < 1 or last < first:
        raise ToolError(f"lines {lines} is not a range of lines (they are numbered from 1, first to last)")
    if first > total:
        raise ToolError(f"event {seq} has {total:,} {'line' if total == 1 else 'lines'}: line {first:,} is past its end")
    return first, min(last, total)


def _numbered(head: str, text: list[str], first: int, last: int) -> str:
    """Lines first..last of `text`, numbered like read_file's, as many as one answer holds."""
    out = [f"{head}, lines {first:,}-{last:,} of {len(text):,}:"]
    used = len(out[0])
    shown = first - 1
    for number in range(first, min(last, first + MAX_LINES - 1) + 1):
        line = f"{number:>6}\t{text[number - 1]}"
        if used + len(line) + 1 > MAX_CHARS:
            if number == first:  # one line longer than an answer: its beginning
                out.append(line[: MAX_CHARS - used - 1])
                out.append(f"[… line {number:,} is cut at {MAX_CHARS:,} characters of answer …]")
                return "\n".join(out)
            break
        out.append(line)
        used += len(line) + 1
        shown = number
    if shown < last:
        out.append(f"[… lines {shown + 1:,}-{last:,} not shown: one answer holds at most {MAX_LINES:,} lines and "
                   f"{MAX_CHARS:,} characters; read on with lines \"{shown + 1}-{last}\" …]")
    return "\n".join(out)


def _matching(head: str, text: list[str], first: int, last: int, matcher: BoundedPattern | list[str],
              query: str, context: int = CONTEXT) -> str:
    """The lines of first..last that match, each with `context` lines around it, as grep -n
    shows them: `N:` a match, `N-` a line of context, `--` between runs that do not touch."""
    hits = [n for n in range(first, last + 1) if _matches(text[n - 1], matcher)]
    where = f"lines {first:,}-{last:,}" if (first, last) != (1, len(text)) else f"its {len(text):,} lines"
    if not hits:
        return f"{head}: no line of {where} matches {query!r}"
    shown = hits[:MAX_MATCH_LINES]
    out = [f"{head}: {len(hits):,} of {where} {'matches' if len(hits) == 1 else 'match'} {query!r}"
           + (f", with {context} lines of context:" if context else ":")]
    marked = set(hits)
    printed = 0  # the last line number printed
    for hit in shown:
        start, end = max(first, hit - context, printed + 1), min(last, hit + context)
        if printed and start > printed + 1:
            out.append("--")
        for number in range(start, end + 1):
            out.append(f"{number:>6}{':' if number in marked else '-'}{text[number - 1]}")
        printed = max(printed, end)
    if len(hits) > len(shown):
        out.append(f"… {len(hits) - len(shown)} more matching lines; narrow the query or the lines")
    return "\n".join(out)


def _heading(record: dict[str, Any]) -> str:
    kind = record.get("type")
    head = f"[seq {record['seq']}] {kind}"
    if kind == "tool_result":
        head += f" of {record.get('tool')} ({'error' if record.get('is_error') else 'ok'})"
    return head


def _matcher(query: str, budget_s: float) -> BoundedPattern | list[str]:
    try:
        return BoundedPattern(query, budget_s)
    except PatternError:
        return [w.lower() for w in query.split()]


def _matches(line: str, matcher: BoundedPattern | list[str]) -> bool:
    if isinstance(matcher, list):
        lowered = line.lower()
        return all(w in lowered for w in matcher)
    return matcher.search(line) is not None


def _search(records: Iterable[dict[str, Any]], matcher: BoundedPattern | list[str]) -> str:
    hits: list[str] = []
    total = 0
    for record in records:
        for number, line in enumerate(_text_of(record).splitlines(), start=1):
            if _matches(line, matcher):
                total += 1
                if len(hits) < MAX_MATCH_LINES:
                    hits.append(f"[seq {record['seq']} {record['type']} line {number}] {line}")
    if not hits:
        return "no matches"
    if total > len(hits):
        hits.append(f"… {total - len(hits)} more matching lines; narrow the query or the seq range")
    return "\n".join(hits)


def _text_of(record: dict[str, Any]) -> str:
    kind = record.get("type")
    if kind == "user":
        return str(record.get("text", ""))
    if kind == "tool_result":
        return str(record.get("output", ""))
    if kind == "assistant":
        parts = []
        for block in record.get("content") or []:
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                parts.append(f"{block.get('name')} {json.dumps(block.get('input', {}), ensure_ascii=False)}")
        return "\n".join(parts)
    if kind in ("observation", "reflection", "error"):
        return str(record.get("text") or record.get("message") or "")
    return json.dumps({k: v for k, v in record.items() if k not in ("v", "ts")}, ensure_ascii=False)


def _whole(record: dict[str, Any], ctx: ToolContext) -> str:
    return f"{_heading(record)}:\n{_text_of(record)}{_pictures(record, ctx)}"


def _pictures(record: dict[str, Any], ctx: ToolContext) -> str:
    """Where the images attached to a user message are kept (recall returns text, not the image)."""
    if record.get("type") != "user":
        return ""
    lines = []
    for ref in image_refs(record.get("images")):
        where = f"kept at {ctx.images / ref.file_name}" if ctx.images is not None else f"kept as {ref.file_name}"
        lines.append(f"\n[attached image {ref.describe()}: {where}]")
    return "".join(lines)


def _joined(parts: Iterable[str]) -> str:
    """Whole events one after another, kept only up to what an answer shows (the rest counted)."""
    kept: list[str] = []
    total = 0
    for part in parts:
        piece = f"\n\n{part}" if kept or total else part
        if total <= MAX_CHARS:
            kept.append(piece)
        total += len(piece)
    if not total and not kept:
        raise ToolError("no events in that seq range")
    text = "".join(kept)
    if total <= MAX_CHARS:
        return text
    return (text[:MAX_CHARS] + f"\n[… recall answer cut at {MAX_CHARS} characters of {total}; "
            "use a query or a narrower seq range to read the rest …]")


def _bounded(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    return (text[:MAX_CHARS] + f"\n[… recall answer cut at {MAX_CHARS} characters of {len(text)}; "
            "use a query or a narrower seq range to read the rest …]")
