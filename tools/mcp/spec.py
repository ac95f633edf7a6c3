"""What scribe knows of one configured MCP server before it starts it, and how the server's
tools are named for the model.

The API takes tool names matching `^[a-zA-Z0-9_-]{1,64}$`; a server may call its tools anything,
and two servers may both have a `search`. So every MCP tool is sent as `mcp__SERVER__TOOL`, with
other characters replaced by `_` and an over-long name cut and given a short hash of the whole,
so distinct tools keep distinct names. (Claude Code spells them the same way.)
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

Transport = Literal["stdio", "http"]
Owner = Literal["person", "workspace"]

PREFIX = "mcp__"
MAX_NAME = 64
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True)
class ServerSpec:
    """One server as configured. `env` and `headers` are already expanded (they may hold
    secrets: never logged); `source` is the file it came from, for messages."""

    name: str
    transport: Transport
    source: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    # Tool names (or fnmatch patterns) that run without asking; `*` is every tool of the server.
    allow: tuple[str, ...] = ()
    # Overrides mcp_call_timeout_s for this server's calls.
    timeout_s: float | None = None
    # Whose the definition is: the person's own config file, or the workspace's (`.mcp.json`,
    # its `.scribe/config.toml`), which the agent or the repository may have written.
    owner: Owner = "person"
    # `sandbox = true|false` as configured; None: the default for its owner (the workspace's run
    # in the sandbox, the person's as configured, outside it).
    sandbox: bool | None = None
    # For a workspace's server that runs outside the sandbox: the files it runs, by hash, as the
    # person confirmed them (tools/mcp/pins.py); None: never confirmed.
    confirmed: tuple[tuple[str, str], ...] | None = None

    @property
    def wants_sandbox(self) -> bool:
        return self.sandbox if self.sandbox is not None else self.owner == "workspace"

    def where(self) -> str:
        """What the server is, in a few words: its command line or its URL."""
        if self.transport == "http":
            return self.url
        return " ".join([self.command, *self.args])

    def allows(self, tool: str) -> bool:
        return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.allow)


def tool_name(server: str, tool: str) -> str:
    """The name the model sees for `tool` of `server`."""
    name = f"{PREFIX}{safe(server)}__{safe(tool)}"
    return name if len(name) <= MAX_NAME else distinct_name(server, tool)


def distinct_name(server: str, tool: str) -> str:
    """The name cut to leave room for a short hash of the exact server and tool names: distinct
    from every other tool's, whatever characters were replaced or cut."""
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{f'{PREFIX}{safe(server)}__{safe(tool)}'[:MAX_NAME - 9]}_{digest}"


def safe(text: str) -> str:
    """`text` with every character a tool name (or a file name) cannot hold replaced by `_`."""
    return _NOT_ALLOWED.sub("_", text)


def unique_names(server: str, tools: Iterable[str]) -> list[tuple[str, str]]:
    """(tool, name) for each tool in order; a name already taken (two tools that differ only
    in characters the API refuses) gets a hash suffix so none is shadowed."""
    taken: set[str] = set()
    out = []
    for tool in tools:
        name = tool_name(server, tool)
        if name in taken:
            name = distinct_name(server, tool)
        taken.add(name)
        out.append((tool, name))
    return out
