"""`scribe mcp list`: the MCP servers configured for this workspace, whether each starts, and
the tools a new session would get from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .exits import cli_errors
from .trust import tell_ignored

if TYPE_CHECKING:
    from scribe.settings.mcp_servers import McpConfig
    from scribe.tools.mcp.hub import ServerState

mcp_app = typer.Typer(help="MCP servers: what is configured, whether each starts, and its tools.",
                      no_args_is_help=True, add_completion=False, rich_markup_mode=None)


@mcp_app.command("list")
def list_servers(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document: the servers, their states and tools.")] = False,
) -> None:
    """Start every configured server (in parallel, waiting at most mcp_start_timeout_s), then
    show each one's state and tools, and stop them again.

    Servers come from [mcp.servers.NAME] tables in ~/.config/scribe/config.toml and
    <workspace>/.scribe/config.toml, and from <workspace>/.mcp.json once trusted
    (trust_mcp_json = true). A workspace's own files count only once you trust the
    workspace (`scribe trust`).
    """
    from scribe.agent.mcptools import open_hub
    from scribe.settings.files import find_workspace, read_config, trust_of
    from scribe.settings.mcp_servers import mcp_config
    from scribe.settings.values import load_settings

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        trust = trust_of(workspace)
        tell_ignored(trust)
        files = read_config(workspace, trust)
        settings = load_settings(workspace, config=files)
        config = mcp_config(workspace, settings, config=files)
        # started as a session starts them: the workspace's in the sandbox, or only as confirmed
        with open_hub(workspace, settings, files) as hub:
            hub.start()
            states = hub.wait()
            allowed = {name: spec.allow for name, spec in hub.specs.items()}
    rows = [_row(s, allowed.get(s.name, ()), settings.mcp_start_timeout_s) for s in states]
    rows += [_untrusted(name, source, config.workspace_trusted) for name, source in config.untrusted.items()]
    if as_json:
        print(json.dumps({"servers": rows}, indent=2, ensure_ascii=False))
        return
    _print(rows, config)


def _row(state: ServerState, allow: tuple[str, ...], limit: float) -> dict[str, Any]:
    import fnmatch

    shown = "no answer" if state.state in ("starting", "not started") else state.state
    error = state.error
    if shown == "no answer":
        error = f"it had not answered within {limit:g} s (mcp_start_timeout_s)"
    return {
        "name": state.name, "transport": state.transport, "where": state.where, "source": state.source,
        "state": shown, "error": error, "skipped": list(state.skipped),
        "tools": [{"name": t.name, "tool": t.tool, "read_only": t.read_only,
                   "allowed": any(fnmatch.fnmatchcase(t.tool, p) for p in allow),
                   "description": t.definition.get("description", "")} for t in state.tools],
    }


def _untrusted(name: str, source: str, workspace_trusted: bool) -> dict[str, Any]:
    error = ("the project's .mcp.json is not trusted: set trust_mcp_json = true to use its servers"
             if workspace_trusted else "this workspace is not trusted: `scribe trust` applies its own files "
             "(and its .mcp.json with trust_mcp_json = true)")
    return {"name": name, "transport": None, "where": None, "source": source, "state": "untrusted",
            "error": error, "skipped": [], "tools": []}


def _print(rows: list[dict[str, Any]], config: McpConfig) -> None:
    if not rows:
        print("no MCP servers configured: add [mcp.servers.NAME] tables to a config file "
              "(scribe config shows which), or a .mcp.json to the workspace")
        return
    for row in rows:
        line = f"{row['name']}  {row['transport'] or '-'}  {row['state']}"
        if row["error"]:
            line += f": {row['error']}"
        print(line)
        if row["where"]:
            print(f"  {row['where']}  (from {row['source']})")
        width = max((len(t["name"]) for t in row["tools"]), default=0)
        for tool in row["tools"]:
            marks = [m for m, on in (("read-only", tool["read_only"]), ("runs without asking", tool["allowed"])) if on]
            print(f"  {tool['name']:<{width}}  {tool['tool']}" + (f"  ({', '.join(marks)})" if marks else ""))
        for skipped in row["skipped"]:
            print(f"  left out: {skipped}")
