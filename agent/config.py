"""What a front end opens the agent core with: one typed value (AgentConfig), no callbacks. A
sub-agent is opened with one too, naming its parent (ChildOf)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scribe.settings.agents import AgentSpec
from scribe.settings.rules import Rule
from scribe.settings.values import PermissionMode, Settings


@dataclass(frozen=True)
class ChildOf:
    """A sub-agent's session: the session and task call that started it, what kind of agent it
    is, and the tools of its parent it may use (agent/task.py)."""

    session: str
    tool_use_id: str
    agent: AgentSpec
    tools: tuple[str, ...]


@dataclass(frozen=True)
class SessionChoice:
    """Which session to run in: a new one, the latest of the workspace, or a given id."""

    continue_latest: bool = False
    session_id: str | None = None
    # A model asked for by name (--model): a continued session switches to it.
    model: str | None = None

    @property
    def continues(self) -> bool:
        return self.continue_latest or self.session_id is not None


@dataclass(frozen=True)
class Overrides:
    """Settings a front end gives on its command line (None: not given), above every file."""

    permission_mode: PermissionMode | None = None
    model: str | None = None
    max_turns: int | None = None
    auto_commit: bool | None = None

    def flags(self) -> Mapping[str, Any]:
        return {name: value for name, value in asdict(self).items() if value is not None}


@dataclass(frozen=True)
class AgentConfig:
    """Everything a front end decides about the agent it opens: one value, no callbacks."""

    cwd: Path
    choice: SessionChoice = SessionChoice()
    overrides: Overrides = Overrides()
    # The settings whole, instead of reading the files and environment (the demo; tests).
    settings: Settings | None = None
    trust_workspace: bool = False  # --trust-workspace: the workspace's own files apply this once
    # A person is there: the REPL's defaults (ask before edits), the trust and server questions,
    # waits their Ctrl-C skips, compression kept off the path of their calls.
    person: bool = False
    # Approval requests are answered (the REPL, stream-json input, the Python API). Otherwise
    # nobody can answer: `ask` from the files means accept-edits, and what the mode asks about is
    # refused, naming the flag that allows it.
    answers: bool = False
    # The agent will run turns: it watches the workspace, starts MCP servers, learns the
    # server's window. `scribe reflect` and `scribe notes curate` do none of that.
    turns: bool = True
    # The configured MCP servers start (`scribe demo` runs without the person's servers).
    servers: bool = True
    # Permission rules given on the command line (--allowed-tools, --disallowed-tools).
    rules: tuple[Rule, ...] = ()
    # A sub-agent's: its parent and kind (its tools a subset of the parent's, its mode never wider).
    child: ChildOf | None = None
    # What a session ends with still to do (its memory's compression, the notes' curation) is
    # done after it, by a process of its own or before scribe exits (agent/finishing/): the
    # front ends a person runs (`scribe run`, the REPL). Headless, it is never done before a call
    # that does not need it.
    finish_after: bool = False
