"""What one log event is worth to a team's dashboards: counter readings and log records.

Pure: an event (and the session it belongs to) in, readings out; no OpenTelemetry here, so the
mapping is tested without a collector. What a person typed is the most a record holds (with
`telemetry_log_prompts`); a file's content, a tool's output and a `!command`'s output never
leave the machine. The names follow Claude Code's (`claude_code.token.usage`
and so on) under the prefix `scribe.`; token kinds keep the log's own names (input, output,
cache_read, cache_write), so a dashboard's sums and `scribe log stats --json` agree key by key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scribe.log.events import (
    Event,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.figures import Pricer
from scribe.log.images import image_refs

Attributes = dict[str, str | int | float | bool]

# The counters, with their unit and what they count (exported as OpenTelemetry sums).
COUNTERS: dict[str, tuple[str, str]] = {
    "scribe.session.count": ("1", "sessions started"),
    "scribe.token.usage": ("tokens", "tokens billed per model call, by type: input, output, cache_read, cache_write"),
    "scribe.cost.usage": ("USD", "what the model calls cost at the configured or list price (priced models only)"),
    "scribe.tool.decision": ("1", "tool calls by the permission decision: allowed, asked or denied"),
    "scribe.compression.count": ("1", "memory compressions: observations and reflections"),
}
TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")
# How a tool result's `permission` (agent/loop.py) reads as a decision, and the person's answer.
DECISIONS = {None: ("allowed", None), "approved": ("asked", "yes"), "approved_always": ("asked", "always"),
             "declined": ("asked", "no"), "denied": ("denied", None)}


@dataclass(frozen=True)
class Reading:
    """Add `value` to the counter `name`, for these attributes."""

    name: str
    value: float
    attributes: Attributes


@dataclass(frozen=True)
class Record:
    """One log record (an OpenTelemetry event): its name and attributes, never a prompt's text
    unless the person opted in, and then only what they typed."""

    name: str
    attributes: Attributes
    body: str = ""


@dataclass
class SessionReadings:
    """The readings of one session's events, as they are appended."""

    session_id: str
    model: str
    price: Pricer
    log_prompts: bool = False
    _tools: dict[str, str] = field(default_factory=dict)

    def started(self, header: SessionEvent) -> tuple[list[Reading], list[Record]]:
        attributes = self._base(model=header.model)
        return [Reading("scribe.session.count", 1, attributes)], [Record("scribe.session_start", attributes)]

    def of(self, event: Event) -> tuple[list[Reading], list[Record]]:
        if isinstance(event, UsageEvent):
            return self._usage(event)
        if isinstance(event, ToolResultEvent):
            return self._tool(event)
        if isinstance(event, ObservationEvent | ReflectionEvent):
            kind = "observation" if isinstance(event, ObservationEvent) else "reflection"
            attributes = self._base(kind=kind, model=event.model)
            return ([Reading("scribe.compression.count", 1, attributes)],
                    [Record("scribe.compression", {**attributes, "tokens": event.tokens})])
        if isinstance(event, UserEvent):
            return [], [self._prompt(event)]
        return [], []

    def _base(self, **more: str | int | float | bool) -> Attributes:
        return {"session.id": self.session_id, **more}

    def _usage(self, event: UsageEvent) -> tuple[list[Reading], list[Record]]:
        attributes = self._base(model=event.model, purpose=event.purpose)
        counts = event.tokens.counts()
        readings = [Reading("scribe.token.usage", counts[kind], {**attributes, "type": kind})
                    for kind in TOKEN_KINDS if counts[kind]]
        cost = self.price(event)[0]
        if cost is not None:
            readings.append(Reading("scribe.cost.usage", cost, attributes))
        record: Attributes = {**attributes, **{f"{kind}_tokens": counts[kind] for kind in TOKEN_KINDS},
                              "duration_ms": event.latency_ms}
        if cost is not None:
            record["cost_usd"] = cost
        return readings, [Record("scribe.api_request", record)]

    def _tool(self, event: ToolResultEvent) -> tuple[list[Reading], list[Record]]:
        permission = event.extra.get("permission")
        decision, answer = DECISIONS.get(permission if isinstance(permission, str) else None, ("allowed", None))
        attributes = self._base(tool=event.tool, decision=decision)
        if answer is not None:
            attributes["answer"] = answer
        record: Attributes = {**attributes, "success": not event.is_error, "duration_ms": event.duration_ms,
                              "output_chars": len(event.output)}
        if event.exit_code is not None:
            record["exit_code"] = event.exit_code
        return [Reading("scribe.tool.decision", 1, attributes)], [Record("scribe.tool_result", record)]

    def _prompt(self, event: UserEvent) -> Record:
        typed = typed_text(event)
        attributes = self._base(prompt_length=len(typed))
        images = image_refs(event.images)
        if images:
            attributes["images"] = len(images)
        return Record("scribe.user_prompt", attributes, typed if self.log_prompts else "")


def typed_text(event: UserEvent) -> str:
    """What the person typed to make a user event, and nothing a file or a command gave it: the
    event's text holds more (the files `@path` attached, the output of a `!command`, the text a
    slash command's file expands to), which is sent to the model but never exported."""
    shell = event.extra.get("shell")
    if isinstance(shell, str):
        return f"!{shell}"
    command = event.extra.get("command")
    if isinstance(command, dict) and isinstance(command.get("name"), str):
        arguments = command.get("arguments")
        return f"/{command['name']}" + (f" {arguments}" if isinstance(arguments, str) and arguments else "")
    attached_at = event.extra.get("attached_at")
    if isinstance(attached_at, int) and not isinstance(attached_at, bool):
        return event.text[:max(0, attached_at)]
    return event.text


def record_attributes(record: Record) -> dict[str, Any]:
    """The attributes a log record is exported with (its name among them, as `event.name`)."""
    return {"event.name": record.name, **record.attributes}
