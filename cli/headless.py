"""Output of a headless turn: plain text as it streams, one JSON summary, or a JSON event stream.

Text mode keeps stdout for the assistant's words (so it pipes cleanly) and puts tool activity
and notices on stderr; both show control characters visibly (`visible`), so neither the answer
nor a tool's arguments or errors can drive the terminal. The JSON outputs are left as they are:
json.dumps escapes control characters, and a program wants the exact text."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from scribe.agent.protocol import (
    AgentEvent,
    AssistantMessage,
    Compressed,
    ModelCallStarted,
    Notice,
    Retrying,
    TextDelta,
    TextWithdrawn,
    ToolCall,
    ToolDone,
    TurnEnded,
    Waiting,
)

from .compressed import compressed_line
from .visible import VisibleStream, visible


class TextSink:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        # The streams of the moment, not of the import: a runner in process swaps them per run.
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self._midline = False
        self._stream = VisibleStream()

    def __call__(self, event: AgentEvent) -> None:
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

    def _note(self, text: str) -> None:
        self.err.write(visible(text) + "\n")
        self.err.flush()


class StreamJsonSink:
    """One JSON object per line for every agent event, for programs that follow a turn live. The
    last, TurnEnded, also says what `--output json` would (`summary`: the session's id and the
    run's usage with its cost), so a program that reads only the stream needs nothing else."""

    def __init__(self, out: TextIO | None = None, *, summary: Callable[[], dict[str, Any]] = dict) -> None:
        self.out = out or sys.stdout
        self.summary = summary

    def __call__(self, event: AgentEvent) -> None:
        record = {"event": type(event).__name__, **_jsonable(event)}
        if isinstance(event, TurnEnded):
            record.update(self.summary())
        self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.out.flush()


def _jsonable(event: AgentEvent) -> dict[str, Any]:
    if isinstance(event, AssistantMessage):
        return {"content": event.event.content, "stop_reason": event.event.stop_reason, "seq": event.event.seq,
                "usage": event.usage.tokens.counts()}
    if isinstance(event, ToolDone):
        r = event.result
        return {"id": event.call.id, "tool": r.tool, "is_error": r.is_error, "exit_code": r.exit_code,
                "denied": event.denied, "seq": r.seq, "output": r.output}
    if isinstance(event, Waiting):
        return {**dataclasses.asdict(event), "reason": event.reason}
    if isinstance(event, (TextDelta, TextWithdrawn, ModelCallStarted, Retrying, ToolCall, Notice, Compressed,
                          TurnEnded)):
        return dataclasses.asdict(event)
    return {}
