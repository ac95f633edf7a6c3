"""Output of headless runs: plain text as it streams, and the stream-json lines.

Text mode keeps stdout for the assistant's words (so it pipes cleanly) and puts tool activity
and notices on stderr; both show control characters visibly (`visible`), so neither the answer
nor a tool's arguments or errors can drive the terminal.

stream-json speaks Claude Code's shapes wherever they fit, so a wrapper written for `claude -p
--output-format stream-json` reads scribe with few changes: `system` (`init` as a session opens,
and scribe's own subtypes: `notice`, `compact_boundary`, `tool_call`, `api_retry`, `waiting`),
`assistant` (one per model call: its content blocks and usage), `user` (the tool results),
`stream_event` (text as it streams), `control_request` (`can_use_tool`: an approval to answer)
and `control_response` (to the requests read on stdin), and one `result` per turn. JSON is left
as it is: json.dumps escapes control characters, and a program wants the exact text."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from scribe.agent.protocol import (
    ActionDone,
    ApprovalRequested,
    AssistantMessage,
    Compacted,
    Compressed,
    CompressionWait,
    Curated,
    Event,
    Failed,
    ModeChanged,
    ModelSwitched,
    Notice,
    Retrying,
    SessionOpened,
    SubagentEvent,
    TextDelta,
    TextWithdrawn,
    ToolCall,
    ToolDone,
    TurnEnded,
    Waiting,
)
from scribe.log.figures import Figures, Pricer

from .compressed import compressed_line
from .visible import VisibleStream, visible

# The stop reasons a turn ends with, as Claude Code's `result` subtypes name them.
RESULT_SUBTYPE = {"end_turn": "success", "max_tokens": "success", "refusal": "error_during_execution",
                  "error": "error_during_execution", "max_turns": "error_max_turns",
                  "interrupted": "error_interrupted"}
# Claude Code's names for the permission modes, and scribe's own.
CLAUDE_MODE = {"read-only": "readOnly", "ask": "default", "accept-edits": "acceptEdits",
               "full-auto": "bypassPermissions", "plan": "plan"}


class TextSink:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        # The streams of the moment, not of the import: a runner in process swaps them per run.
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self._midline = False
        self._stream = VisibleStream()

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self.out.write(self._stream.feed(event.text))
            self.out.flush()
            self._midline = not event.text.endswith("\n")
        elif isinstance(event, AssistantMessage):
            rest = self._stream.flush()
            if self._midline or rest:
                self.out.write(rest + "\n")
            self._midline = False
        elif isinstance(event, Retrying):
            # What was shown stays: the retried call's text continues it (model/shown.py).
            self._note(f"retrying: {event.reason}")
        elif isinstance(event, TextWithdrawn):
            rest = self._stream.flush()
            if self._midline or rest:
                self.out.write(rest + "\n")
                self.out.flush()
            self._midline = False
            self._note("the retried answer differs from the text above; it starts again below")
        # Waiting is not shown: a slow first token is common and stderr is read by scripts; a
        # server that stays silent ends in a "retrying: timed out ..." line.
        elif isinstance(event, ToolCall):
            self._note(f"→ {event.name} {event.summary}")
        elif isinstance(event, ToolDone) and event.result.is_error:
            first = visible(event.result.output.strip()).splitlines()[:1]
            self._note(f"  ✗ {first[0] if first else 'error'}")
        elif isinstance(event, Notice):
            self._note(event.text)
        elif isinstance(event, Compressed):
            self._note(compressed_line(event))
        elif isinstance(event, SubagentEvent) and (line := subagent_line(event)) is not None:
            self._note(line)
        elif isinstance(event, CompressionWait):
            self._note(event.reason)

    def _note(self, text: str) -> None:
        self.err.write(visible(text) + "\n")
        self.err.flush()


def subagent_line(event: SubagentEvent) -> str | None:
    """One line for what a sub-agent did: it started, called a tool, or ended (and how)."""
    inner = event.event
    if isinstance(inner, SessionOpened):
        return f"  ↳ sub-agent {event.agent}: started (session {event.session_id})"
    if isinstance(inner, ToolCall):
        return f"  ↳ {event.agent.split(':', 1)[0]} → {inner.name} {inner.summary}"
    if isinstance(inner, TurnEnded):
        how = "done" if inner.reason == "end_turn" else inner.reason.replace("_", " ")
        return f"  ↳ sub-agent {event.agent}: {how} after {inner.calls} model call{'s' if inner.calls != 1 else ''}"
    return None


@dataclass
class TurnFigures:
    """What one turn cost, counted as its model calls come (a result line, a JSON summary)."""

    price: Pricer
    totals: Figures = field(default_factory=Figures)
    started: float = field(default_factory=time.monotonic)
    denials: list[dict[str, Any]] = field(default_factory=list)

    def count(self, event: Event) -> None:
        if isinstance(event, AssistantMessage):
            self.totals.add(event.usage.tokens, *self.price(event.usage))
        elif isinstance(event, ToolDone) and event.denied:
            self.denials.append({"tool_name": event.call.name, "tool_use_id": event.call.id,
                                 "tool_input": event.call.args})


class StreamJson:
    """One JSON object per line, in Claude Code's stream-json shapes (see the module docstring),
    with scribe's own fields beside them. Safe to write from two threads (the events, and the
    answers to control requests read on stdin)."""

    def __init__(self, out: TextIO | None = None, *, price: Pricer,
                 summary: Callable[[], dict[str, Any]] = dict) -> None:
        self.out = out or sys.stdout
        self.price = price
        self.summary = summary  # what a result line adds (the log, memory health, notes)
        self.session_id: str | None = None
        self._turn: TurnFigures | None = None
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            self.out.write(line)
            self.out.flush()

    def __call__(self, event: Event) -> None:
        record = self.record(event)
        if record is not None:
            self.write(record)

    def record(self, event: Event) -> dict[str, Any] | None:
        if isinstance(event, SessionOpened):
            self.session_id = event.session_id
            return self._system("init", cwd=str(event.workspace), model=event.model,
                                permissionMode=CLAUDE_MODE.get(event.mode, event.mode), permission_mode=event.mode,
                                tools=list(event.tools), mcp_servers=[], resumed=event.resumed, log=str(event.path),
                                parent_session_id=event.parent, notes=list(event.notices) + list(event.problems))
        turn = self._turn if self._turn is not None else self._new_turn()
        turn.count(event)
        if isinstance(event, TextDelta):
            return self._line("stream_event", event={"type": "content_block_delta", "index": 0,
                                                     "delta": {"type": "text_delta", "text": event.text}})
        if isinstance(event, AssistantMessage):
            a, usage = event.event, event.usage
            return self._line("assistant", message={
                "id": a.message_id, "type": "message", "role": "assistant", "model": a.model, "content": a.content,
                "stop_reason": a.stop_reason, "stop_sequence": None, "usage": usage.tokens.counts()}, seq=a.seq)
        if isinstance(event, ToolDone):
            r = event.result
            return self._line("user", message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": r.tool_use_id, "content": r.output, "is_error": r.is_error}]},
                tool_use_result={"tool": r.tool, "exit_code": r.exit_code, "denied": event.denied, "seq": r.seq})
        if isinstance(event, ApprovalRequested):
            return {"type": "control_request", "request_id": event.id, "request": {
                "subtype": "can_use_tool", "tool_name": event.call.name, "input": event.call.args,
                "tool_use_id": event.call.id, "summary": event.call.summary, "permission_mode": event.mode,
                "agent": event.agent,
                "asked_by": event.question.rule.text if event.question.rule is not None else None,
                "permission_suggestions": [offer.text for offer in event.question.offers]},
                "session_id": self.session_id}
        if isinstance(event, TurnEnded):
            self._turn = None
            return self._result(event, turn)
        if isinstance(event, ToolCall):
            return self._system("tool_call", tool_use_id=event.id, name=event.name, summary=event.summary)
        if isinstance(event, Compressed):
            return self._system("compact_boundary", compact_metadata={
                "trigger": "auto", "pre_tokens": event.tokens_before, "post_tokens": event.tokens_after},
                kind=event.kind, seq_from=event.seq_from, seq_to=event.seq_to, seq=event.seq, folded=event.folded,
                model_free=event.model_free, text=compressed_line(event))
        if isinstance(event, SubagentEvent):
            line = subagent_line(event)
            return self._system("subagent", agent=event.agent, agent_session_id=event.session_id,
                                event=type(event.event).__name__, text=line) if line is not None else None
        if isinstance(event, Compacted):
            return self._system("compact_boundary", compact_metadata={
                "trigger": "manual", "pre_tokens": event.before, "post_tokens": event.after})
        if isinstance(event, Retrying):
            return self._system("api_retry", attempt=event.attempt, reason=event.reason)
        if isinstance(event, CompressionWait):
            return self._system("compression_wait", reason=event.reason, tokens=event.tokens, room=event.room,
                                refused=event.refused, ahead=event.ahead)
        if isinstance(event, Waiting):
            return self._system("waiting", reason=event.reason, silent_s=event.silent_s, stage=event.stage,
                                answering=event.answering)
        if isinstance(event, TextWithdrawn):
            return self._system("text_withdrawn", text=event.text)
        if isinstance(event, ModeChanged):
            return self._system("status", permissionMode=CLAUDE_MODE.get(event.mode, event.mode),
                                permission_mode=event.mode)
        if isinstance(event, ModelSwitched):
            return self._system("status", model=event.model, previous_model=event.previous)
        if isinstance(event, Curated):
            return self._system("notice", text=event.text) if event.noteworthy else None
        if isinstance(event, Notice | ActionDone | Failed):
            return self._system("notice", text=event.text, error=isinstance(event, Failed))
        return None

    def _new_turn(self) -> TurnFigures:
        self._turn = TurnFigures(self.price)
        return self._turn

    def _line(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, **fields, "parent_tool_use_id": None, "session_id": self.session_id}

    def _system(self, subtype: str, **fields: Any) -> dict[str, Any]:
        return {"type": "system", "subtype": subtype, **fields, "session_id": self.session_id}

    def _result(self, ended: TurnEnded, turn: TurnFigures) -> dict[str, Any]:
        usage = turn.totals.as_dict()
        failed = ended.reason in ("error", "refusal")
        return {"type": "result", "subtype": RESULT_SUBTYPE.get(ended.reason, "error_during_execution"),
                "is_error": failed, "duration_ms": int((time.monotonic() - turn.started) * 1000),
                "num_turns": ended.calls, "result": ended.text, "stop_reason": ended.reason,
                "session_id": self.session_id, "total_cost_usd": usage["cost_usd"], "usage": usage,
                "permission_denials": turn.denials, "errors": [ended.error] if ended.error else [],
                **self.summary()}
