"""The contract every tool keeps: its definition for the model, its kind for the permission
policy, and the output it hands back to the agent loop."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from scribe.tools.secrets import Redactor

if TYPE_CHECKING:
    from scribe.workspace.git.planted import GitConfigWatch
    from scribe.workspace.sandbox.protection import Protection

# "mcp" and "mcp-read": a tool of an MCP server, and one its server marks read-only. "web": a
# fetch from the web; "web-listed": one of a domain on the person's allow-list (tools/web.py).
# "task": a call that hands work to a sub-agent, whose own calls its own mode decides (agent/task.py).
ToolKind = Literal["read", "edit", "command", "mcp", "mcp-read", "web", "web-listed", "task"]


class ToolError(Exception):
    """A tool refused or failed in a way the model should read as an error result."""


class PathRefused(ToolError):
    """A path resolves outside the workspace, or into `.git/` or `.scribe/`."""


@dataclass(frozen=True)
class ToolOutput:
    """What one tool call produced. `text` is the full output the log keeps (already bounded
    for runaway commands: `dropped_bytes` says how much was cut from the middle)."""

    text: str
    is_error: bool = False
    exit_code: int | None = None
    dropped_bytes: int = 0
    # API content blocks sent with the text (an MCP tool's images), and non-text content kept
    # in the log only (see tools/mcp/content.py).
    blocks: list[dict[str, Any]] = field(default_factory=list)
    attachments: list[dict[str, Any]] = field(default_factory=list)
    # How to take back a file tool's change (tools/restore.py); logged with the result, never sent.
    restore: dict[str, Any] | None = None
    # Git configuration a command created or changed (workspace/git/planted.py), for the person and
    # the log (a `git_config` event); the model reads it in `text`.
    git_config: list[dict[str, Any]] = field(default_factory=list)
    # A task call's sub-agent (agent/task.py): its session, kind and how it ended; logged, never sent.
    child: dict[str, Any] | None = None


class OutputTail:
    """The end of what a running command has printed, as it prints it: written by the command's
    reader, read from any thread by a front end that shows it live (the REPL's live area). What
    is read is redacted as a tool's output is (`redact`); the result keeps the output whole."""

    KEEP_BYTES = 8192

    def __init__(self, redact: Callable[[str], str] = lambda text: text) -> None:
        self.redact = redact
        self._data = bytearray()
        self._cut = False  # the start was dropped: its first line is partial
        self._lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self._lock:
            self._data += chunk
            if len(self._data) > self.KEEP_BYTES:
                del self._data[:-self.KEEP_BYTES]
                self._cut = True

    def lines(self, count: int) -> list[str]:
        """The last `count` lines, each as a terminal would leave it (a progress bar's carriage
        returns keep what came after the last one)."""
        with self._lock:
            data, cut = bytes(self._data), self._cut
        text = self.redact(data.decode("utf-8", errors="replace").replace("\r\n", "\n"))
        lines = [line.rsplit("\r", 1)[-1] for line in text.split("\n")]
        if cut:
            lines = lines[1:]
        while lines and not lines[-1].strip():
            lines.pop()
        return lines[-count:]


class CommandInterrupted(KeyboardInterrupt):
    """Ctrl-C (or a signal that ends scribe) reached a running command: it was ended, and
    `output` is what it printed until then (kept, so the log and the model see how far it
    got). `cause` is the interrupt itself, raised again once the result is recorded."""

    def __init__(self, output: ToolOutput, cause: KeyboardInterrupt | None = None) -> None:
        super().__init__(*(cause.args if cause is not None else ()))
        self.output = output
        self.cause = cause if cause is not None else KeyboardInterrupt()


@dataclass
class ToolContext:
    """What a tool may use besides its input. Built once per session by the agent."""

    workspace: Path
    # Extra roots outside the workspace that config allows tools to touch.
    allowed_roots: tuple[Path, ...] = ()
    command_timeout_s: float = 120.0
    # Bytes of command output kept in the log (head and tail); the rest is counted and dropped.
    output_cap_bytes: int = 1_000_000
    # Returns the session's raw events as JSON-ready records (for `recall`), read from the log as
    # they are iterated: a long log is not held in memory for it.
    read_log: Callable[[], Iterable[dict[str, Any]]] | None = None
    # sha256 of each file as the agent last read or wrote it (workspace-relative posix path).
    seen_hashes: dict[str, str] = field(default_factory=dict)
    # Where commands run (the sandbox, or what stands in for it); None: detect it on first use.
    protection: Protection | None = None
    # The workspace's git folders and their configuration as last looked at, compared before and
    # after each command and each workspace hook (tools/command.py `git_watch`); None: not yet.
    git_watch: GitConfigWatch | None = None
    # Replaces secret values in every tool's output before it is logged.
    redact: Redactor = field(default_factory=Redactor.from_environ)
    # Seconds of regular-expression matching one search may spend (search_files, recall).
    regex_timeout_s: float = 5.0
    # scribe's own folders (the state folder, the person's scribe config folder with its trust
    # file): never read or written by a tool, wherever they are and whatever path leads there.
    scribe_folders: tuple[Path, ...] = ()
    # Where the session keeps the images attached to its messages (log/attachments.py), for recall.
    images: Path | None = None
    # A sub-agent's log, by its session id, as `read_log` gives this session's; None when the id
    # is not a sub-agent of this session (recall's `session`).
    read_child_log: Callable[[str], Callable[[], Iterable[dict[str, Any]]] | None] | None = None
    # Set when the person (or a program) cancels what runs now: a tool that waits checks it
    # between its waits and stops as a Ctrl-C would stop it (`stop_if_cancelled`).
    cancelled: threading.Event | None = None
    # Where the command running now writes its output as it comes, for a front end to show live
    # (set by the agent loop for the length of one call).
    output_tail: OutputTail | None = None


def stop_if_cancelled(cancelled: threading.Event | None) -> None:
    """Raise KeyboardInterrupt, once, when a cancel was asked for: a wait that checks this between
    its slices stops within one slice, whatever thread it runs on."""
    if cancelled is not None and cancelled.is_set():
        cancelled.clear()
        raise KeyboardInterrupt  # as Ctrl-C does: the record says "cancelled by the user"


def kind_of(tool: Tool, args: dict[str, Any]) -> ToolKind:
    """The kind of one call: a tool whose calls differ (web_fetch of an allowed domain) says so
    through `kind_for(args)`; any other is its `kind`."""
    kind_for = getattr(tool, "kind_for", None)
    return kind_for(args) if callable(kind_for) else tool.kind


class Tool(Protocol):
    name: str
    kind: ToolKind
    description: str
    # A constant of the tool's class, shared by its instances: tool_definitions hands the API copies.
    input_schema: dict[str, Any]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...

    def summary(self, args: dict[str, Any]) -> str:
        """One short line naming the call's main argument, for display and permission prompts."""
        ...
