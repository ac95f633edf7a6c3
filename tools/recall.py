"""recall: read the session's own raw log back, whole, by seq range or by search.

Observations compress old events and the prompt shows long outputs only as head and tail; the
log keeps everything. This tool is how an exact detail (a line of code written early on, an
error message, the middle of a long output) comes back into view.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from scribe.log.images import image_refs
from scribe.tools.base import ToolContext, ToolError, ToolKind, ToolOutput
from scribe.tools.pattern import BoundedPattern, PatternError, PatternTooSlow, cut_note

# One answer is bounded like any tool output; a narrower query or range reads further.
MAX_CHARS = 40_000
MAX_MATCH_LINES = 200


class Recall:
    name = "recall"
    kind: ToolKind = "read"
    description = (
        "Read this session's log back exactly, when an observation or an elided output lacks a "
        "detail. seq_from/seq_to: those events whole (messages, tool calls, full outputs). query "
        "(regex, or words that must all appear): matching lines with their seq; add a seq range to "
        "search one long output."
    )
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Regular expression or words to find."},
            "seq_from": {"type": "integer", "minimum": 0, "description": "First event seq to read."},
            "seq_to": {"type": "integer", "minimum": 0, "description": "Last event seq to read (inclusive)."},
        },
        "required": [],
        "additionalProperties": False,
    }

    def summary(self, args: dict[str, Any]) -> str:
        parts = []
        if args.get("query"):
            parts.append(repr(args["query"]))
        if args.get("seq_from") is not None or args.get("seq_to") is not None:
            parts.append(f"seq {args.get('seq_from', '')}-{args.get('seq_to', '')}")
        return " ".join(parts) or "(nothing)"

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if ctx.read_log is None:
            raise ToolError("recall is not available: this session has no log")
        query, lo, hi = args.get("query"), args.get("seq_from"), args.get("seq_to")
        if not query and lo is None and hi is None:
            raise ToolError("recall needs a query, a seq range (seq_from, seq_to), or both")
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
    kind = record.get("type")
    head = f"[seq {record['seq']}] {kind}"
    if kind == "tool_result":
        status = "error" if record.get("is_error") else "ok"
        head += f" of {record.get('tool')} ({status})"
    return f"{head}:\n{_text_of(record)}{_pictures(record, ctx)}"


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
