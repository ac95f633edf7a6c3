"""Sub-agents the `task` tool can hand work to (agent/task.py): the built-in `general`, and the
person's and the workspace's own, as markdown files in Claude Code's format.

    ~/.config/scribe/agents/reviewer.md        the person's own
    <workspace>/.scribe/agents/reviewer.md     the workspace's, only when it is trusted

A file opens with a front matter between `---` lines: `name` (else the file's name),
`description` (what the model reads to choose it), `tools` (the tools it may use, by name,
comma-separated; a name the session does not have is left out; none given: every tool but `task`),
and `model` (else the session's). The text after it is the sub-agent's system prompt.

The workspace's files are read with the bytes trust fingerprinted (settings/files.py
`workspace_files`): a changed or new agent file makes the workspace a stranger's again. The
person's own agent wins over the workspace's of the same name, each clash said in one line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .commands import front_matter
from .files import WORKSPACE_AGENTS, read_command_files, user_config_dir
from .trust import WorkspaceTrust

GENERAL = "general"
GENERAL_DESCRIPTION = ("A general-purpose agent for a piece of work that takes many steps or reads many files: "
                       "searching, reading and summarising code, running checks, making a well-defined change.")
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")


@dataclass(frozen=True)
class AgentSpec:
    """One kind of sub-agent, as the session records it (its `agents`)."""

    name: str
    description: str
    prompt: str  # its system prompt, before the environment and project texts
    tools: tuple[str, ...] | None = None  # None: every tool of the parent but `task`
    model: str | None = None
    source: str = "built in"

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "prompt": self.prompt,
                "tools": list(self.tools) if self.tools is not None else None, "model": self.model,
                "source": self.source, "sha256": hashlib.sha256(self.prompt.encode("utf-8")).hexdigest()}

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> AgentSpec:
        tools = record.get("tools")
        return cls(str(record["name"]), str(record.get("description", "")), str(record.get("prompt", "")),
                   tuple(str(t) for t in tools) if isinstance(tools, list) else None,
                   str(record["model"]) if record.get("model") else None, str(record.get("source", "")))


GENERAL_AGENT = AgentSpec(GENERAL, GENERAL_DESCRIPTION, "")


@dataclass(frozen=True)
class AgentSet:
    agents: dict[str, AgentSpec] = field(default_factory=dict)
    # One line each for what was left out and why (a clash, an unreadable file, an untrusted workspace).
    notes: list[str] = field(default_factory=list)


def person_agents_dir() -> Path:
    return user_config_dir() / "agents"


def load_agents(trust: WorkspaceTrust) -> AgentSet:
    """`general`, the person's agents, then the workspace's as trust read them (only when trusted)."""
    agents = {GENERAL: GENERAL_AGENT}
    notes: list[str] = []
    folder = person_agents_dir()
    files, problems = read_command_files(folder)
    notes += [p.replace("commands:", "agents:", 1) for p in problems]
    _add(agents, notes, files, lambda rel: str(folder / rel))
    prefix = WORKSPACE_AGENTS + "/"
    own = {name.removeprefix(prefix): data for name, data in trust.files.items() if name.startswith(prefix)}
    if own and not trust.trusted:
        notes.append(f"agents: ignored this workspace's {len(own)} agent file{'s' if len(own) != 1 else ''} "
                     f"({prefix}): the workspace is not trusted; `scribe trust` applies them")
    elif own:
        _add(agents, notes, own, lambda rel: prefix + rel)
    return AgentSet(agents, notes)


def _add(agents: dict[str, AgentSpec], notes: list[str], files: Mapping[str, bytes], shown: Any) -> None:
    for rel, data in sorted(files.items()):
        where = shown(rel)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            notes.append(f"agents: ignored {where}: not UTF-8 text")
            continue
        meta, body = front_matter(text)
        name = (meta.get("name") or Path(rel).stem).strip().lower()
        if not _NAME.fullmatch(name):
            notes.append(f"agents: ignored {where}: {name!r} is not a name (letters, digits, '-', '_', '.')")
            continue
        if name in agents:
            notes.append(f"agents: ignored {where}: {name} is already {agents[name].source}")
            continue
        if not body.strip():
            notes.append(f"agents: ignored {where}: it has no system prompt after its front matter")
            continue
        tools = tuple(t.strip() for t in re.split(r"[,\s]+", meta["tools"]) if t.strip()) if meta.get("tools") else None
        agents[name] = AgentSpec(name, meta.get("description", ""), body.strip(), tools, meta.get("model") or None,
                                 where)
