"""What the agent tells its front ends. The CLI (rich, plain text, JSON) renders these; the
agent never prints. Log events are the record; these are the live view of a turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from scribe.log.events import AssistantEvent, ToolResultEvent, UsageEvent


@dataclass(frozen=True)
class TextDelta:
    """More of the answer, continuing what was shown of this model call so far."""

    text: str


@dataclass(frozen=True)
class TextWithdrawn:
    """The retried call's answer differs from the text already shown for this call: `text` is
    not part of the answer, which starts again with the next TextDelta. (While a retried call
    repeats what was shown, nothing is sent; only text past it arrives as TextDelta.)"""

    text: str


@dataclass(frozen=True)
class ModelCallStarted:
    call: int  # 1-based within the turn


@dataclass(frozen=True)
class Retrying:
    """The call failed and is tried again whole; the text shown so far stays (see TextWithdrawn)."""

    attempt: int
    reason: str


@dataclass(frozen=True)
class Waiting:
    """The server has sent nothing for `silent_s` seconds: still connecting or thinking
    (`answering` False), or paused mid-answer. The call gives up after `timeout_s` seconds of
    silence (`request_timeout_s`). Sent once per silent spell, as soon as it is noticeable, so a
    front end can say at once what it waits for."""

    attempt: int
    server: str  # host[:port]
    silent_s: float
    timeout_s: float
    answering: bool

    @property
    def reason(self) -> str:
        what = "the answer paused" if self.answering else "no answer yet"
        return (f"{what} from {self.server} after {self.silent_s:g} s; "
                f"giving up after {self.timeout_s:g} s of silence")


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
    """Something worth a line to the person that is not part of the conversation. `routine`:
    bookkeeping that went as it should or mends itself, which a front end may leave unsaid."""

    text: str
    routine: bool = False


@dataclass(frozen=True)
class CommitFailed(Notice):
    """The auto-commit the person asked for did not happen, and nothing moved; a headless run
    that meets one exits non-zero."""


@dataclass(frozen=True)
class Compressed:
    """Memory was compressed: raw events into an observation, or observations into a reflection."""

    kind: Literal["observation", "reflection"]
    tokens_before: int
    tokens_after: int
    seq_from: int
    seq_to: int
    model_free: bool = False  # an extractive summary: no model answer was usable


StopReason = Literal["end_turn", "max_turns", "interrupted", "error", "refusal", "max_tokens"]


@dataclass(frozen=True)
class TurnEnded:
    reason: StopReason
    text: str  # the assistant's final text, if any
    calls: int
    error: str | None = None


AgentEvent = (TextDelta | TextWithdrawn | ModelCallStarted | Retrying | Waiting | AssistantMessage | ToolCall | ToolDone
              | Notice | Compressed | TurnEnded)
