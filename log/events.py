"""The event vocabulary of the observation log: one dataclass per line type.

Every line of a session log is one of these. They are the only shape the writer, the reader,
the renderer and `scribe log` know. Fields a newer scribe added, and whole types this version
does not know, survive a read/write round trip (`extra`, `UnknownEvent`) so that an older
reader never destroys what a newer writer recorded. How a line's JSON becomes one of these, and
back, is log/codec.py's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from .usage import Tokens

LOG_FORMAT_VERSION = 1

# Wire-format content blocks (text, tool_use, ...) are kept exactly as the API defines them.
Block = dict[str, Any]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# The `model` an extractive observation is logged with, so stats and the page can tell it apart.
EXTRACTIVE_MODEL = "extractive"

@dataclass(frozen=True)
class Event:
    seq: int
    ts: str
    type: ClassVar[str] = ""
    # Fields this version does not know, kept so a rewrite-free round trip loses nothing.
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class SessionEvent(Event):
    """First line of every log: what the session was started with.

    `system` and `tools` are the exact instructions and tool definitions the session renders,
    so a request can be rebuilt from the log alone even after scribe itself changes."""

    type: ClassVar[str] = "session"
    id: str
    created: str
    cwd: str
    model: str
    scribe_version: str
    system: str
    tools: list[dict[str, Any]]
    prompt_hash: str
    config: dict[str, Any]
    git_head: str | None = None
    git_branch: str | None = None
    # Project files read into the instructions (AGENTS.md, CLAUDE.md, the notes): path and sha256.
    sources: list[dict[str, str]] = field(default_factory=list)
    # The MCP servers as the session found them: per server its name, transport, state and the
    # tools pinned from it (their definitions are in `tools`), so `--continue` offers the same.
    mcp: list[dict[str, Any]] = field(default_factory=list)
    # What protected scribe from the commands it ran (workspace/sandbox/protection.py Protection.record()).
    protection: dict[str, Any] = field(default_factory=dict)
    # The sub-agents its `task` tool can start, as their definitions were at its start
    # (settings/agents.py AgentSpec.record): a continued session starts the same ones.
    agents: list[dict[str, Any]] = field(default_factory=list)
    # A sub-agent's session: the session and the task call that started it, and its kind.
    parent: dict[str, Any] | None = None

    @functools.cached_property
    def recorded(self) -> RecordedConfig:
        """The settings a request is rebuilt with, read from `config` once."""
        return RecordedConfig.of(self.config, self.model)


# What a log that predates a setting meant by its absence: the values scribe used before the
# setting was recorded (not today's defaults, which may change).
BEFORE_MAX_TOKENS = 16384
BEFORE_OUTPUT_CHARS = 12_000


@dataclass(frozen=True)
class RecordedConfig:
    """The part of a session's recorded config that decides its requests, typed: render and the
    token estimates read these, and only these, so both agree."""

    model: str
    max_tokens: int
    # A long tool output enters the prompt as a preview of this many characters (context/preview.py).
    # None: a session recorded before previews, whose long outputs were shown as head and tail
    # up to `render_output_chars`, and still are, so its requests rebuild byte for byte.
    preview_chars: int | None
    render_output_chars: int
    # Outputs older than the last few turns are shown this short; a session recorded before the
    # setting existed shortens nothing.
    settled_output_chars: int

    @classmethod
    def of(cls, config: Mapping[str, Any], model: str) -> RecordedConfig:
        output_chars = _whole(config.get("render_output_chars"), BEFORE_OUTPUT_CHARS)
        preview = config.get("preview_chars")
        return cls(
            model=str(config.get("model") or model),
            max_tokens=_whole(config.get("max_tokens"), BEFORE_MAX_TOKENS),
            preview_chars=None if preview is None else _whole(preview, BEFORE_OUTPUT_CHARS),
            render_output_chars=output_chars,
            settled_output_chars=_whole(config.get("settled_output_chars"), output_chars),
        )


def _whole(value: Any, absent: int) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else absent


# A field whose empty value is left out of the line, so lines without it keep their old shape.
OMIT_EMPTY = {"omit_empty": True}


@dataclass(frozen=True)
class UserEvent(Event):
    type: ClassVar[str] = "user"
    text: str
    # Images attached to the message (log/images.py ImageRef records), sent before its text; their
    # bytes are kept beside the log (log/attachments.py).
    images: list[dict[str, Any]] = field(default_factory=list, metadata=OMIT_EMPTY)


@dataclass(frozen=True)
class AssistantEvent(Event):
    type: ClassVar[str] = "assistant"
    content: list[Block]
    stop_reason: str | None
    message_id: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class ToolResultEvent(Event):
    type: ClassVar[str] = "tool_result"
    tool_use_id: str
    tool: str
    output: str
    is_error: bool = False
    exit_code: int | None = None
    duration_ms: int = 0
    dropped_bytes: int = 0
    # sha256 of the files this call read or wrote, as it saw them (path -> hash): a continued
    # session rebuilds from these what the agent last saw, so stale edits stay refused.
    seen: dict[str, str] = field(default_factory=dict)
    # Content blocks sent after the output text (an MCP tool's images or PDFs), as the API takes them.
    blocks: list[Block] = field(default_factory=list)
    # Non-text content of an MCP result the API cannot take (audio, binary resources, links), as sent.
    attachments: list[Block] = field(default_factory=list)
    # A task call's sub-agent: its session, kind and how it ended (agent/task.py).
    child: dict[str, Any] | None = None


@dataclass(frozen=True)
class UsageEvent(Event):
    type: ClassVar[str] = "usage"
    purpose: str  # agent | observer | reflector | curator
    model: str
    input: int
    cache_read: int
    cache_write: int
    output: int
    latency_ms: int = 0
    message_id: str | None = None
    # The server the call went to when it was not Anthropic's API (its host and port, as
    # "127.0.0.1:8080"): such a call is not billed at a list price. None: Anthropic's API, or a
    # log from before this field.
    server: str | None = None

    @property
    def tokens(self) -> Tokens:
        return Tokens(self.input, self.cache_read, self.cache_write, self.output)


@dataclass(frozen=True)
class ObservationEvent(Event):
    type: ClassVar[str] = "observation"
    text: str
    seq_from: int
    seq_to: int
    tokens: int
    model: str


@dataclass(frozen=True)
class ReflectionEvent(Event):
    type: ClassVar[str] = "reflection"
    text: str
    # seq numbers of the observation (or earlier reflection) events this one replaces
    supersedes: list[int]
    tokens: int
    model: str


@dataclass(frozen=True)
class FileChangeEvent(Event):
    """A file changed, and not by the agent's own file tools (from the watcher).

    `stale`: the agent had read or written the file, and what it saw is no longer what is there.
    `during_command`: it changed while the agent's own command ran (reported only when stale:
    who changed it cannot be told apart). kind "many" stands for `count` further changes too
    numerous to list one by one (`path`: the folder they share, "." for the workspace)."""

    type: ClassVar[str] = "file_change"
    path: str
    kind: str  # created | modified | deleted | moved | many
    hash: str | None = None
    stale: bool = False
    dest: str | None = None
    during_command: bool = False
    count: int = 0


@dataclass(frozen=True)
class GitCommitEvent(Event):
    """scribe committed the files its file tools wrote in a turn (auto_commit).

    `skipped`: files it wrote but left out, each with the reason (changed outside scribe,
    uncommitted changes from before the turn, ignored by git, gone)."""

    type: ClassVar[str] = "git_commit"
    sha: str
    message: str
    files: list[str]
    parent: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GitUndoEvent(Event):
    """A scribe commit was undone (`scribe undo`, `/undo`): HEAD went back to `head` (its
    parent) and `files` are as they were before it."""

    type: ClassVar[str] = "git_undo"
    sha: str
    files: list[str]
    head: str


@dataclass(frozen=True)
class GitConfigEvent(Event):
    """A command (`tool_use_id`'s), or a workspace's hook (`hook`: its event and command), created
    or changed git configuration in the workspace: a new repository, a config file, a hook,
    attributes, a `.git` file. Each of `changes` names the git folder (workspace-relative),
    whether it is new, what of it changed, and the keys and hooks among it that run a program
    (`programs`), which the person's own git would run."""

    type: ClassVar[str] = "git_config"
    changes: list[dict[str, Any]]
    tool_use_id: str | None = None
    hook: str | None = None


@dataclass(frozen=True)
class UndoEvent(Event):
    """The person took back what scribe's file tools changed in one turn (`/undo` with no
    commit of scribe's at HEAD), from the `restore` records of that turn's results: `files` are
    as they were before the turn, and `removed`, which the turn created, are gone again. `turn`
    is the seq of the user event that began it."""

    type: ClassVar[str] = "undo"
    turn: int
    files: list[str]
    removed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NotesEvent(Event):
    """The project notes were curated from this session: `text` is the file as written, covering
    the session's events up to `upto`; `before` is the sha256 of the file it replaced."""

    type: ClassVar[str] = "notes"
    path: str
    text: str
    upto: int
    entries: int
    model: str
    before: str | None = None


@dataclass(frozen=True)
class ModelSwitchEvent(Event):
    """The person switched the session's model (`/model NAME`, or `--model` with `--continue`):
    calls from here on use `model`. The prompt cache is per model, so the next call writes anew."""

    type: ClassVar[str] = "model_switch"
    model: str


@dataclass(frozen=True)
class ModeEvent(Event):
    """The permission mode changed in the session (`/mode`, Shift-Tab, a plan accepted). Entering
    and leaving plan mode are said to the model (context/render.py); other changes are not."""

    type: ClassVar[str] = "mode"
    mode: str
    previous: str


@dataclass(frozen=True)
class ContextWindowEvent(Event):
    """What the session learned of its model's context window: the server's own report at a
    session start (source "server") or the numbers of a request it refused for its size
    ("error"). The compression thresholds follow it; the requests themselves do not change."""

    type: ClassVar[str] = "context_window"
    tokens: int
    source: str  # server | error
    model: str  # the session's model when it was learned


@dataclass(frozen=True)
class NoToolsEvent(Event):
    """What the session learned: its server gives `model` no tools (llama.cpp drops `tools` for a
    model whose chat template has none). source "server": the server's own report (/props);
    "answer": an answer wrote a tool call out as text instead of making one (`detail` quotes
    it). The requests do not change (the tools layer never does inside a session): the session
    goes on as chat, and a continued one says so from this event without asking again."""

    type: ClassVar[str] = "no_tools"
    model: str
    source: str  # server | answer
    detail: str = ""


@dataclass(frozen=True)
class LeftOutEvent(Event):
    """The raw events seq_from..seq_to (a turn) did not fit the context window even with what
    came before them compressed: every later request leaves them out (the log keeps them,
    `recall` reads them), so a failed turn is not carried forward."""

    type: ClassVar[str] = "left_out"
    seq_from: int
    seq_to: int
    tokens: int  # the size of what did not fit, as the server counted it or as estimated
    window: int
    reason: str


@dataclass(frozen=True)
class HookEvent(Event):
    """One run of a configured hook (agent/hooks/runner.py): the event it ran for (`hook`), its
    `command` and whose it is (`owner`: person or workspace), its `exit_code` (None: it timed out
    or did not run), how long it took, the `outcome` (ok, blocked, failed, timeout, skipped), its
    stderr, and `feedback`: the text the model is shown of it ("" for none), rendered after the
    events before it. A tool event's run also names the `tool` and `tool_use_id` (extra fields)."""

    type: ClassVar[str] = "hook"
    hook: str
    command: str
    owner: str
    outcome: str
    exit_code: int | None = None
    duration_ms: int = 0
    stderr: str = ""
    feedback: str = ""


@dataclass(frozen=True)
class InterruptEvent(Event):
    type: ClassVar[str] = "interrupt"
    tool_use_ids: list[str]
    reason: str = "interrupted"


@dataclass(frozen=True)
class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    kind: str  # api | tool | internal
    message: str


@dataclass(frozen=True)
class UnknownEvent(Event):
    """A line of a type this version does not know: kept, counted, never rendered."""

    type_name: str = ""


EVENT_CLASSES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        SessionEvent,
        UserEvent,
        AssistantEvent,
        ToolResultEvent,
        UsageEvent,
        ObservationEvent,
        ReflectionEvent,
        FileChangeEvent,
        GitCommitEvent,
        GitUndoEvent,
        GitConfigEvent,
        UndoEvent,
        NotesEvent,
        ModelSwitchEvent,
        ModeEvent,
        ContextWindowEvent,
        NoToolsEvent,
        LeftOutEvent,
        HookEvent,
        InterruptEvent,
        ErrorEvent,
    )
}
