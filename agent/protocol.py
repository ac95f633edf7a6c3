"""The agent's protocol: what a front end submits to the core (agent/core.py) and the events the
core sends back. Every front end speaks it (the REPL, `scribe run` with each of its outputs,
stream-json over stdin, the Python API) and so does a parent to a sub-agent; nothing else
crosses between them. Plain, typed values: no callbacks, no terminal, nothing that is not data.

    submissions in   UserMessage, ApprovalAnswer, TrustAnswer, ServersAnswer, Cancel, Compact,
                     SwitchModel, SetMode, RunShell, NewSession, Resume, Undo, CurateNotes, End
    events out       the life of a session (questions before it opens, waits, the greeting),
                     a turn as it happens (text, calls, approvals, results, usage, compression,
                     notices) and its end; Ended when the core has closed

A question the core asks (an approval, trust, MCP servers) is an event answered by a submission
naming the same request; the core waits for the answer (or a Cancel) before it goes on.

The log's events (log/events.py) are the record; these are the live view of a turn, and of a
session's life around its turns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from scribe.agent.finishing.handover import Handover
from scribe.log.events import AssistantEvent, ToolResultEvent, UsageEvent
from scribe.model.events import Notice, Retrying, TextDelta, TextWithdrawn, Waiting
from scribe.settings.rules import Rule
from scribe.settings.values import PermissionMode
from scribe.tools.base import OutputTail
from scribe.workspace.images import PreparedImage

# -- submissions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class UserMessage:
    """A message for the model. `command`: the slash command whose expansion `text` is (its name,
    file and arguments, recorded with the message and never sent: `-c` replays the command)."""

    text: str
    images: tuple[PreparedImage, ...] = ()
    command: dict[str, Any] | None = None
    # Where in `text` the files its `@path` words attached begin (agent/actions/attach.py): what
    # came before is what was typed, the part telemetry may export.
    attached_at: int | None = None


@dataclass(frozen=True)
class Offer:
    """Allow rules that would let a call run without asking (one per command of its line)."""

    rules: tuple[Rule, ...]

    @property
    def text(self) -> str:
        return ", ".join(rule.text for rule in self.rules)

    def kept_in(self, source: str) -> Offer:
        """The same rules, kept in `source` (a config file, or THIS_SESSION)."""
        return Offer(tuple(Rule(r.verdict, r.tool, r.pattern, source, r.matcher) for r in self.rules))


@dataclass(frozen=True)
class Question:
    """Why a call is put to the person, and what an "always" could keep."""

    # An ask rule that asks: then "always" keeps nothing (the rule asks every time).
    rule: Rule | None = None
    # Why a rule asks without matching: it could not be checked (a line read only in part).
    why: str | None = None
    # Allow rules that would let this very call run: the exact one first, then a broader one.
    offers: tuple[Offer, ...] = ()
    # Why no rule could let it run (a command line that cannot be read with certainty).
    unmatchable: str | None = None


class Decision(StrEnum):
    """An answer to an approval request."""

    ALLOW = "allow"  # this call, once
    ALLOW_ALWAYS = "allow_always"  # this tool, for the rest of the session
    DECLINE = "decline"  # the model is told the person declined; the turn goes on
    STOP = "stop"  # nothing runs and the turn stops (the person is saying something else)


@dataclass(frozen=True)
class ApprovalAnswer:
    request_id: str
    decision: Decision
    # Said to the model with a decline ("use the other file").
    remark: str = ""
    # With ALLOW_ALWAYS: allow rules to keep instead of allowing the whole tool (one of the
    # question's offers, kept where the person said: a config file, or this session).
    keep: Offer | None = None


@dataclass(frozen=True)
class TrustAnswer:
    """To a TrustRequested: whether the workspace's own files may apply (recorded when yes)."""

    trusted: bool


@dataclass(frozen=True)
class ServersAnswer:
    """To a ServersToConfirm: whether that server starts on its files as they are now."""

    name: str
    confirmed: bool


@dataclass(frozen=True)
class Cancel:
    """Stop what runs now (a turn, a compaction, a wait), recording what it did; nothing when idle."""


@dataclass(frozen=True)
class Compact:
    """Compress memory now; `focus` is given to the Observer as what matters most."""

    focus: str = ""


@dataclass(frozen=True)
class SwitchModel:
    model: str


@dataclass(frozen=True)
class SetMode:
    mode: PermissionMode


@dataclass(frozen=True)
class AcceptPlan:
    """The person accepts the plan the last turn ended with: the mode becomes `mode`, and the
    agent carries the plan out (a turn of its own; `remark` joins its message)."""

    mode: PermissionMode
    remark: str = ""


@dataclass(frozen=True)
class RunShell:
    """The person's own shell command (`!cmd`): runs in the sandbox without a question, and its
    output joins the conversation."""

    command: str


@dataclass(frozen=True)
class NewSession:
    """End this session and start a new one (`/clear`)."""


@dataclass(frozen=True)
class Resume:
    """End this session and continue the one named (an id or any unique part of it)."""

    session: str


@dataclass(frozen=True)
class Undo:
    """Take back what scribe's file tools changed in the last turn."""


@dataclass(frozen=True)
class CurateNotes:
    """Merge what this session taught into the project notes now."""


@dataclass(frozen=True)
class End:
    """Close the session: nothing more is taken after it."""


Submission = (UserMessage | ApprovalAnswer | TrustAnswer | ServersAnswer | Cancel | Compact | SwitchModel | SetMode
              | AcceptPlan | RunShell | NewSession | Resume | Undo | CurateNotes | End)


# -- a turn, as it happens ---------------------------------------------------------------------


@dataclass(frozen=True)
class ModelCallStarted:
    call: int  # 1-based within the turn


@dataclass(frozen=True)
class AssistantMessage:
    """One model call's answer as the log keeps it, and its usage."""

    event: AssistantEvent
    usage: UsageEvent


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model made. `output`: a command's output as it runs (its end, redacted),
    for a front end that shows it live; the result (ToolDone) holds it whole."""

    id: str
    name: str
    args: dict[str, Any]
    summary: str
    output: OutputTail | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ApprovalRequested:
    """The mode asks before `call` runs: answered by an ApprovalAnswer with this `id`. `agent`:
    the sub-agent that asks (its name and session), None for the session's own calls."""

    id: str
    call: ToolCall
    mode: PermissionMode
    agent: str | None = None
    # Why it asks (an ask rule) and what an "always" could keep (agent/permissions.py).
    question: Question = field(default_factory=Question)


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


@dataclass(frozen=True)
class SubagentEvent:
    """Something a sub-agent did, for the front end to show under the task call that started it:
    its session opening, its tool calls, its end. (Its approvals come as ApprovalRequested
    naming it.) `agent`: its kind and the task's description."""

    agent: str
    session_id: str
    event: Event


@dataclass(frozen=True)
class CompressionWait:
    """The turn's next request would not fit the model's window, and a compression is what makes
    room: the one started between turns (agent/compression/ahead.py), which the turn waits for,
    or (`ahead` False) one made now, before the call. A cancel stops the wait, and the turn.
    `tokens`: the request as it stands (the server's count where it has one: a refusal's, or the
    last request's and what came since); `room`: the most a request may hold in the window."""

    tokens: int
    room: int
    refused: bool = False  # the server refused the request for its size (else it is foreseen)
    ahead: bool = True

    @property
    def reason(self) -> str:
        # The server's own count of a refused request; otherwise partly an estimate.
        size = f"was refused at {self.tokens:,}" if self.refused else f"is ~{self.tokens:,}"
        what = "waiting for the compression running since the last turn" if self.ahead else "compressing memory first"
        return f"{what}: this request {size} tokens, and the window leaves it {self.room:,}"


StopReason = Literal["end_turn", "max_turns", "interrupted", "error", "refusal", "max_tokens"]
STOP_REASONS: tuple[StopReason, ...] = ("end_turn", "max_turns", "interrupted", "error", "refusal", "max_tokens")


@dataclass(frozen=True)
class TurnEnded:
    reason: StopReason
    text: str  # the assistant's final text, if any
    calls: int
    error: str | None = None


AgentEvent = (TextDelta | TextWithdrawn | ModelCallStarted | Retrying | Waiting | AssistantMessage | ToolCall
              | ApprovalRequested | ToolDone | Notice | Compressed | CompressionWait | TurnEnded | SubagentEvent)


# -- a session's life around its turns ---------------------------------------------------------


@dataclass(frozen=True)
class TrustRequested:
    """The workspace has files of its own that do not apply until the person trusts it: `lines`
    say what they would change. Answered by a TrustAnswer."""

    workspace: Path
    lines: tuple[str, ...]


@dataclass(frozen=True)
class ServersToConfirm:
    """A server of the trusted workspace runs outside the sandbox on files changed since the
    person confirmed them. Answered by a ServersAnswer naming it."""

    name: str
    line: str  # what changed, and what it runs


@dataclass(frozen=True)
class CurationStarted:
    """Sessions are being curated into the project notes, a wait the person did not ask for.
    `earlier`: the workspace's earlier sessions, before a new one starts; else the one ending."""

    earlier: bool


@dataclass(frozen=True)
class Curated:
    """What curating one session did (agent/curation/curator.py); not `noteworthy` when there was
    simply nothing new."""

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

    session_id: str
    path: Path  # its log
    workspace: Path
    model: str
    mode: PermissionMode
    resumed: bool  # a continued session (else a new one)
    problems: tuple[str, ...]  # what the reader met in its log (a torn line, bad lines)
    notices: tuple[str, ...]  # e.g. a damaged newer session passed over to find it
    mcp: tuple[str, ...]  # a new session's servers and tools it has no tools from
    tools: tuple[str, ...] = ()  # the names of the session's tools, in order
    parent: str | None = None  # the session that started this one (a sub-agent's)


@dataclass(frozen=True)
class ModeChanged:
    mode: PermissionMode


@dataclass(frozen=True)
class ModelSwitched:
    model: str
    previous: str
    changed: bool  # False: the session was on it already


@dataclass(frozen=True)
class Compacted:
    """A compaction asked for ended: the next request's estimated tokens, by part, before and
    after (fixed instructions and tools are the same on both sides)."""

    observations_before: int
    raw_before: int
    observations_after: int
    raw_after: int
    fixed: int

    @property
    def before(self) -> int:
        return self.fixed + self.observations_before + self.raw_before

    @property
    def after(self) -> int:
        return self.fixed + self.observations_after + self.raw_after


@dataclass(frozen=True)
class ShellDone:
    """The person's `!command` ran (in the sandbox); its output is in the conversation now."""

    command: str
    output: str
    exit_code: int | None
    is_error: bool
    planted: str | None = None  # the git configuration it created or changed, said in one line


@dataclass(frozen=True)
class ActionDone:
    """A workspace action the person asked for ended (undo, a shell command, curating): `text`
    says what it did; `ok` False when it did nothing (and why)."""

    text: str
    ok: bool = True


@dataclass(frozen=True)
class Failed:
    """A submission could not be carried out (an unknown session to resume, a log that cannot be
    written): one line; the core goes on."""

    text: str


@dataclass(frozen=True)
class Ended:
    """The core has closed: its session ended, its servers stopped. The last event."""

    session_id: str | None
    lines: tuple[str, ...] = field(default=())  # what the teardown had to say (telemetry that could not export)
    # What its sessions left to do after them (agent/finishing/): the front end hands it on.
    left: tuple[Handover, ...] = field(default=())


LifeEvent = (TrustRequested | ServersToConfirm | CurationStarted | Curated | CurationEnded | ServersStarting
             | ServersWaited | SessionOpened | ModeChanged | ModelSwitched | Compacted | ShellDone | ActionDone
             | Failed | Ended)

Event = AgentEvent | LifeEvent
