"""What the agent tells its front ends. The CLI (rich, plain text, JSON) renders these; the
agent never prints. Log events are the record; these are the live view of a turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from scribe.memory.events import AssistantEvent, ToolResultEvent, UsageEvent


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ModelCallStarted:
    call: int  # 1-based within the turn


@dataclass(frozen=True)
class Retrying:
    attempt: int
    reason: str


@dataclass(frozen=True)
class AssistantMessage:
    event: AssistantEvent
    usage: UsageEvent


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    args: dict[str, Any]
    summary: str


@dataclass(frozen=True)
class ToolDone:
    call: ToolCall
    result: ToolResultEvent
    denied: bool = False


@dataclass(frozen=True)
class Notice:
    """Something worth a line to the person that is not part of the conversation."""

    text: str


@dataclass(frozen=True)
class Compressed:
    """Memory was compressed: raw events into an observation, or observations into a reflection."""

    kind: Literal["observation", "reflection"]
    tokens_before: int
    tokens_after: int
    seq_from: int
    seq_to: int


StopReason = Literal["end_turn", "max_turns", "interrupted", "error", "refusal", "max_tokens"]


@dataclass(frozen=True)
class TurnEnded:
    reason: StopReason
    text: str  # the assistant's final text, if any
    calls: int
    error: str | None = None


AgentEvent = (TextDelta | ModelCallStarted | Retrying | AssistantMessage | ToolCall | ToolDone | Notice | Compressed
              | TurnEnded)
