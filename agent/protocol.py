"""What the agent tells its front ends. The CLI (rich, plain text, JSON) renders these; the
agent never prints. Log events are the record; these are the live view of a turn, and of a
session's life around its turns (starting, continuing, curating, pinning MCP tools, greeting).
Both go through agent/driver.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from scribe.log.events import AssistantEvent, ToolResultEvent, UsageEvent
from scribe.model.events import Notice, Retrying, TextDelta, TextWithdrawn, Waiting

if TYPE_CHECKING:
    from scribe.agent.session.session import Session


@dataclass(frozen=True)
class ModelCallStarted:
    call: int  # 1-based within the turn


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
class CommitFailed(Notice):
    """The auto-commit the person asked for did not happen, and nothing moved; a headless run
    that meets one exits non-zero."""


@dataclass(frozen=True)
class Compressed:
    """Memory was compressed: raw events into an observation, or observations into a reflection."""

    kind: Literal["observation", "reflection"]
    tokens_before: int
    tokens_after: int
    seq_from: int  # the first raw event observed, or the first chunk condensed
    seq_to: int
    seq: int  # of the observation or reflection event it appended
    # How many it folded: the raw events an observation replaced (context/compressions.py's
    # replaced_raw), or the chunks a reflection condensed.
    folded: int
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


# -- a session's life around its turns (agent/lifecycle.py, agent/assembly.py) ----------------

@dataclass(frozen=True)
class CurationStarted:
    """Sessions are being curated into the project notes, a wait the person did not ask for.
    `earlier`: the workspace's earlier sessions, before a new one starts; else the one ending."""

    earlier: bool


@dataclass(frozen=True)
class Curated:
    """What curating one session did (agent/curation/curator.py); not `noteworthy` when there was simply
    nothing new."""

    text: str
    noteworthy: bool


@dataclass(frozen=True)
class CurationEnded:
    skipped: bool = False  # the person stopped it (Ctrl-C)


@dataclass(frozen=True)
class ServersStarting:
    """The new session waits for its MCP servers, at most `limit_s`, before it pins their tools."""

    names: tuple[str, ...]
    limit_s: float


@dataclass(frozen=True)
class ServersWaited:
    """The wait is over: the tools of the servers ready now are the session's."""

    stopped: bool = False  # the person stopped waiting (Ctrl-C)


@dataclass(frozen=True)
class SessionOpened:
    """The greeting: the session a front end runs in from now on, and what is worth a line."""

    session: Session
    model: str
    mode: str  # the permission mode
    resumed: bool  # a continued session (else a new one)
    problems: tuple[str, ...]  # what the reader met in its log (a torn line, bad lines)
    notices: tuple[str, ...]  # e.g. a damaged newer session passed over to find it
    mcp: tuple[str, ...]  # a new session's servers and tools it has no tools from (mcptools.start_notes)


LifeEvent = CurationStarted | Curated | CurationEnded | ServersStarting | ServersWaited | SessionOpened
