"""What an untrusted workspace's own files would change, in the person's words: the settings
its `.scribe/config.toml` sets and the MCP servers it and `.mcp.json` would start. The REPL's
question and the one line that says what was ignored are made from it.

Read from the very bytes whose fingerprint trust records (settings/trust.py), without applying or
checking them: a file that does not parse is named as such, and asked about like any other.
"""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scribe.workspace.sandbox.environment import is_secret

from .files import WORKSPACE_AGENTS, WORKSPACE_COMMANDS
from .mcp_servers import VARIABLE
from .trust import MCP_JSON, WorkspaceTrust

SHOWN_CHARS = 80


@dataclass(frozen=True)
class OwnFile:
    """One of the workspace's own files: what it sets and which servers it names."""

    name: str
    settings: dict[str, str]  # name -> the value as written
    servers: dict[str, str]  # name -> what it runs (the command line, or the URL)
    unreadable: str | None = None
    # A custom command file (settings/commands.py): the command it adds, `/review`.
    command: str | None = None
    # A sub-agent file (settings/agents.py): the agent it adds.
    agent: str | None = None
    # name -> the secret variables of the person's environment its settings name (`${GITHUB_TOKEN}`
    # in its env, headers, URL or arguments): given to the server as it starts, in or out of the sandbox.
    secrets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Its permission rules as written (`allow run_command(git status*)`), from its [permissions] table.
    rules: tuple[str, ...] = ()

    def change(self) -> str:
        """`.scribe/config.toml sets sandbox = false and starts MCP server x (`cmd`)`."""
        if self.unreadable is not None:
            return f"{self.name}: {self.unreadable}"
        if self.command is not None:
            return f"{self.name} adds the command {self.command} (its text is sent to the model when you type it)"
        if self.agent is not None:
            return (f"{self.name} adds the sub-agent {self.agent} (its text is the system prompt of the agents the "
                    "model starts with the task tool)")
        parts = []
        if self.settings:
            parts.append("sets " + ", ".join(f"{k} = {v}" for k, v in self.settings.items()))
        if self.rules:
            parts.append("adds the permission rule" + ("s " if len(self.rules) > 1 else " ") + ", ".join(self.rules))
        if self.servers:
            names = ", ".join(f"{name} (`{what}`)" for name, what in self.servers.items())
            parts.append(f"starts MCP server{'s' if len(self.servers) > 1 else ''} {names}")
        given = "; ".join(f"gives server {name} your {', '.join(names)}" for name, names in self.secrets.items())
        return f"{self.name} " + (" and ".join(parts) if parts else "sets nothing") + (f"; {given}" if given else "")

    def summary(self) -> str:
        """`.mcp.json (2 servers)`: what the one line names."""
        if self.unreadable is not None:
            return f"{self.name} ({self.unreadable})"
        if self.command is not None:
            return f"{self.name} (command {self.command})"
        if self.agent is not None:
            return f"{self.name} (sub-agent {self.agent})"
        what = list(self.settings)
        if self.rules:
            what.append(f"{len(self.rules)} permission rule{'s' if len(self.rules) > 1 else ''}")
        if self.servers:
            what.append(f"{len(self.servers)} MCP server{'s' if len(self.servers) > 1 else ''}")
        return f"{self.name} ({', '.join(what) or 'empty'})"


def own_files(trust: WorkspaceTrust) -> list[OwnFile]:
    # The config file first: it is the one that can lift protections; command files last.
    order = sorted(trust.files.items(), key=lambda item: (item[0].startswith((WORKSPACE_COMMANDS + "/",
                                                                              WORKSPACE_AGENTS + "/")),
                                                          item[0] == MCP_JSON, item[0]))
    return [_read(name, data) for name, data in order]


def question(trust: WorkspaceTrust) -> list[str]:
    """The lines put to the person before the REPL applies a workspace's own files."""
    why = "" if trust.reason == "not trusted" else f" ({trust.reason})"
    return [f"This workspace's own files would change how scribe runs here{why}:",
            *(f"  {f.change()}" for f in own_files(trust)),
            "A repository can ship these files; trust them only if you know what they do."]


PROMPT = "Trust this workspace and apply them? [y/N] "


def ignored_line(trust: WorkspaceTrust) -> str:
    """One line: which of the workspace's files were ignored, why, and how to apply them."""
    files = " and ".join(f.summary() for f in own_files(trust))
    return f"ignored this workspace's {files}: {trust.reason}; `scribe trust` to apply them"


def _read(name: str, data: bytes) -> OwnFile:
    if name.startswith(WORKSPACE_COMMANDS + "/"):
        relative = name.removeprefix(WORKSPACE_COMMANDS + "/").removesuffix(".md")
        return OwnFile(name, {}, {}, command="/" + ":".join(relative.split("/")).lower())
    if name.startswith(WORKSPACE_AGENTS + "/"):
        return OwnFile(name, {}, {}, agent=Path(name).stem.lower())
    try:
        text = data.decode("utf-8")
        parsed: Any = json.loads(text) if name == MCP_JSON else tomllib.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError):
        return OwnFile(name, {}, {}, unreadable="not valid JSON" if name == MCP_JSON else "not valid TOML")
    if not isinstance(parsed, dict):
        return OwnFile(name, {}, {}, unreadable="not a table of settings")
    if name == MCP_JSON:
        servers = parsed.get("mcpServers")
    else:
        table = parsed.get("mcp")
        servers = table.get("servers") if isinstance(table, dict) else None
    servers = servers if isinstance(servers, dict) else {}
    settings = {k: _shown(v) for k, v in parsed.items() if k not in ("mcp", "permissions")} if name != MCP_JSON else {}
    rules = _rules(parsed.get("permissions")) if name != MCP_JSON else ()
    return OwnFile(name, settings, _servers(servers), secrets=_secrets(servers), rules=rules)


def _rules(table: Any) -> tuple[str, ...]:
    """`deny run_command(rm *)`, as written: asked about, never applied, so never checked here."""
    if not isinstance(table, dict):
        return (f"permissions = {_shown(table)}",) if table is not None else ()
    return tuple(f"{verdict} {_cut(str(rule))}" for verdict, listed in table.items()
                 for rule in (listed if isinstance(listed, list) else [listed]))


def _servers(table: dict[str, Any]) -> dict[str, str]:
    found = {}
    for name, entry in table.items():
        entry = entry if isinstance(entry, dict) else {}
        if entry.get("enabled", True) is False:
            continue
        if "url" in entry:
            found[str(name)] = _cut(str(entry["url"]))
            continue
        given = entry.get("args")
        args = given if isinstance(given, list) else []
        words = [str(entry.get("command", "")), *map(str, args)]
        found[str(name)] = _cut(shlex.join(words))
    return found


def _secrets(table: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """For each server that would start, the secret variables its settings name, by the rules
    the sandbox strips them by (workspace/sandbox/environment.py): whatever the sandbox strips, a
    `${NAME}` in the config hands to the server all the same."""
    found = {}
    for name, entry in table.items():
        if not isinstance(entry, dict) or entry.get("enabled", True) is False:
            continue
        names = sorted({match.group(1) for text in _strings(entry) for match in VARIABLE.finditer(text)
                        if is_secret(match.group(1), os.environ.get(match.group(1), ""))})
        if names:
            found[str(name)] = tuple(names)
    return found


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _shown(value: Any) -> str:
    return _cut(json.dumps(value, ensure_ascii=False, default=str))


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"
