"""MCP tools, pinned per session.

A new session waits for the servers at most `mcp_start_timeout_s` (they start in parallel),
then fixes its tools: the ready servers' tools, in server-name order and each server's own
order, with the exact definitions they listed. The session event records them (`tools`, and
per server in `mcp`), and from then on the session's tools come from the log, never from the
servers: `--continue` sends the same definitions whatever a server offers now, and a call to a
tool its server no longer has comes back as an error result saying so.

A server that had not answered by the limit is recorded as `pending` and has no tools in this
session (adding them later would move the cached prefix); the next session lists it again.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

from scribe.agent.protocol import LifeEvent, ServersStarting, ServersWaited
from scribe.log.events import SessionEvent
from scribe.log.private import make_private_folder
from scribe.settings.files import ConfigFiles, state_dir
from scribe.settings.mcp_servers import McpConfig, mcp_config
from scribe.settings.protection import protection_for
from scribe.settings.values import Settings
from scribe.tools.mcp.catalog import ListedTool
from scribe.tools.mcp.hub import McpHub, ServerState
from scribe.tools.mcp.spec import distinct_name
from scribe.tools.mcp.tool import McpTool
from scribe.tools.secrets import Redactor


def open_hub(workspace: Path, settings: Settings, files: ConfigFiles | None = None, *,
             found: McpConfig | None = None) -> McpHub:
    """The hub for this workspace's configured servers (none started yet; may be empty): those
    `found` already, else from the config files as read already, else as they are now."""
    config = found or mcp_config(workspace, settings, config=files)
    log_dir = state_dir(workspace) / "mcp"
    if config.servers:
        make_private_folder(log_dir)  # before a server's stderr file is made in it (tools/mcp/link.py)
    # The command sandbox, which the servers the workspace defines start in (as commands do).
    sandboxed = [s for s in config.servers if s.transport == "stdio" and s.wants_sandbox]
    return McpHub(config.servers, workspace, log_dir=log_dir,
                  start_timeout_s=settings.mcp_start_timeout_s, call_timeout_s=settings.mcp_call_timeout_s,
                  protection=protection_for(workspace, settings) if sandboxed else None)


# Why a server still starting has no tools when the person stopped the wait.
STOPPED_WAITING = "it had not answered when the person stopped waiting (Ctrl-C)"


def waited(limit_s: float) -> str:
    """Why a server still starting has no tools: the session waited as long as it may."""
    return f"it had not answered within {limit_s:g} s (mcp_start_timeout_s)"


def pinning(hub: McpHub, limit_s: float, *,
            skippable: bool = False) -> Generator[LifeEvent, None, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """A new session waits for its servers (started already) at most `limit_s`, and pins what
    they offer by then (see `pin`). `skippable`: a person is there, whose Ctrl-C stops waiting."""
    yield ServersStarting(tuple(hub.specs), limit_s)
    stopped = False
    try:
        states = hub.wait(limit_s)
    except KeyboardInterrupt:
        if not skippable:
            raise
        states, stopped = hub.states(), True
    yield ServersWaited(stopped)
    return pin(states, STOPPED_WAITING if stopped else waited(limit_s))


def pin(states: Sequence[ServerState], pending: str,
        redact: Redactor | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The MCP tool definitions a new session sends, and the `mcp` record of its session event
    (`pending`: why a server still starting has no tools, see `waited`). A failed server's error
    holds what it printed, so it is redacted like any tool output before it is logged."""
    redact = redact or Redactor.from_environ()
    definitions: list[dict[str, Any]] = []
    record: list[dict[str, Any]] = []
    taken: set[str] = set()
    for server in states:
        entry: dict[str, Any] = {"server": server.name, "transport": server.transport}
        if server.state == "ready":
            tools = [_distinct(server.name, t, taken) for t in server.tools]
            entry.update(state="ready", error=None, tools=[
                {"name": t.name, "tool": t.tool, "read_only": t.read_only} for t in tools])
            definitions += [t.definition for t in tools]
        elif server.state in ("starting", "not started"):
            entry.update(state="pending", error=pending, tools=[])
        else:
            entry.update(state="failed", error=redact(server.error or "it stopped"), tools=[])
        if server.skipped:
            entry["skipped"] = list(server.skipped)
        record.append(entry)
    return definitions, record


def _distinct(server: str, listed: ListedTool, taken: set[str]) -> ListedTool:
    """Two servers whose names differ only in characters the API refuses ("a.b", "a_b") would
    send the same tool name, and the API refuses a request with a name twice."""
    name = listed.name
    if name in taken:
        name = distinct_name(server, listed.tool)
        listed = ListedTool(listed.tool, {**listed.definition, "name": name}, listed.read_only)
    taken.add(name)
    return listed


def session_tools(header: SessionEvent, hub: McpHub) -> list[McpTool]:
    """The MCP tools a session pinned, rebuilt from its session event."""
    sent = {str(d.get("name")): d for d in header.tools}
    tools = []
    for server in header.mcp:
        for pinned in server.get("tools", []):
            definition = sent.get(pinned["name"])
            if definition is not None:
                listed = ListedTool(pinned["tool"], definition, bool(pinned.get("read_only")))
                tools.append(McpTool(hub, server["server"], listed))
    return tools


def pinned_servers(header: SessionEvent) -> list[str]:
    return [s["server"] for s in header.mcp if s.get("tools")]


def allowed_without_asking(tools: Sequence[McpTool], hub: McpHub) -> frozenset[str]:
    """The tools whose server's `allow` list names them (as configured now: permissions are not
    part of the prompt)."""
    return frozenset(t.name for t in tools if (spec := hub.specs.get(t.server)) is not None and spec.allows(t.tool))


def start_notes(header: SessionEvent) -> list[str]:
    """One line per server the new session has no tools from, and per tool left out."""
    lines = []
    for server in header.mcp:
        name = server.get("server")
        if server.get("state") == "pending":
            lines.append(f"mcp: server '{name}': {server.get('error')}; its tools are not in this session "
                         "(a new session lists them once it answers)")
        elif server.get("state") == "failed":
            lines.append(f"mcp: server '{name}' failed: {server.get('error')}; its tools are not in this session")
        for skipped in server.get("skipped", []):
            lines.append(f"mcp: server '{name}': left out tool {skipped}")
    return lines
