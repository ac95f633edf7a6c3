"""Which MCP servers this workspace has: `[mcp.servers.NAME]` tables in the config files, and
Claude Code's `.mcp.json` at the workspace root.

Weakest first, a later source replacing a server of the same name:
    ~/.config/scribe/config.toml  ->  <workspace>/.mcp.json  ->  <workspace>/.scribe/config.toml

A workspace's own files (`.mcp.json`, and `.scribe/config.toml` unless SCRIBE_HOME moves it out)
apply only once the person trusts the workspace (settings/trust.py). `.mcp.json` is usually
committed with the project, so a clone could start any program on your machine; its servers are
used only when the workspace is trusted and `trust_mcp_json = true` as well (in a config file
that applies, or as SCRIBE_TRUST_MCP_JSON), as Claude Code asks before using them.

`${VAR}` and `${VAR:-default}` in a command, its arguments, `env`, a URL or `headers` are
replaced from the environment (so a committed file can name a token without holding it).

A stdio server the workspace defines runs in the command sandbox unless its entry says
`sandbox = false`; one that runs outside it starts only on the files the person confirmed
(settings/trust.py keeps them, `confirmed` carries them to the link that starts it). A server
of the person's own config file runs as configured (outside, unless `sandbox = true`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from scribe.tools.mcp.pins import content_pin
from scribe.tools.mcp.spec import Owner, ServerSpec, Transport

from .files import ConfigError, ConfigFiles, own_config_path, read_config, read_config_file, trust_store
from .trust import MCP_JSON, WorkspaceTrust
from .values import Settings

KEYS = ("type", "command", "args", "env", "cwd", "url", "headers", "allow", "timeout_s", "enabled", "sandbox")
_TRANSPORTS: dict[str, Transport] = {"stdio": "stdio", "http": "http", "streamable-http": "http",
                                     "streamable_http": "http"}
# `${NAME}` or `${NAME:-default}` in a server's settings: the value of the environment variable.
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class McpConfig:
    servers: list[ServerSpec]
    # Servers of a `.mcp.json` left unused because it is not trusted (name -> the file).
    untrusted: dict[str, str] = field(default_factory=dict)
    # Whether the workspace itself is trusted (else `.scribe/config.toml`'s servers are left out too).
    workspace_trusted: bool = True


def mcp_config(workspace: Path, settings: Settings, environ: Mapping[str, str] | None = None, *,
               trust: WorkspaceTrust | None = None, config: ConfigFiles | None = None) -> McpConfig:
    """`config`: the files as read already, else read now under `trust`."""
    environ = os.environ if environ is None else environ
    config = config or read_config(workspace, trust)
    trust = config.trust
    found: dict[str, ServerSpec | None] = {}
    untrusted: dict[str, str] = {}
    found.update(_from_toml(*config.user, environ, "person"))
    project = workspace / MCP_JSON
    if MCP_JSON in trust.files:  # as read when trust was decided, never again
        if settings.trust_mcp_json and trust.trusted:
            found.update(_from_mcp_json(project, environ, trust.files[MCP_JSON]))
        else:
            untrusted = {name: str(project) for name in _mcp_json_names(project, trust.files[MCP_JSON])}
    state_owner: Owner = "person" if own_config_path(workspace) is None else "workspace"
    for path, data in config.state:  # then the state folder's, when it applies
        found.update(_from_toml(path, data, environ, state_owner))
    servers = [_confirmed(spec, workspace, trust) for spec in found.values() if spec is not None]
    return McpConfig(sorted(servers, key=lambda s: s.name), {k: v for k, v in untrusted.items() if k not in found},
                     trust.trusted)


def _confirmed(spec: ServerSpec, workspace: Path, trust: WorkspaceTrust) -> ServerSpec:
    """A workspace's stdio server with the files the person confirmed it runs: as recorded in the
    trust file, or as they are now when the workspace is trusted for this run only."""
    if spec.owner != "workspace" or spec.transport != "stdio":
        return spec
    if trust.for_this_run:
        return replace(spec, confirmed=content_pin(spec, workspace).files)
    entry = trust_store().find(workspace)
    files = entry.servers.get(spec.name) if entry is not None else None
    return replace(spec, confirmed=tuple(sorted(files.items())) if files is not None else None)


def _from_toml(path: Path, data: dict[str, Any], environ: Mapping[str, str],
               owner: Owner) -> dict[str, ServerSpec | None]:
    """The `[mcp.servers.*]` tables of a scribe config file (the rest is settings/values.py's)."""
    table = data.get("mcp")
    if table is None:
        return {}
    if not isinstance(table, dict) or set(table) - {"servers"}:
        raise ConfigError(f"{path}: [mcp] holds only [mcp.servers.NAME] tables")
    servers = table.get("servers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcp.servers must be a table of servers")
    return {name: _spec(name, entry, f"{path}: mcp.servers.{name}", str(path), environ, owner, strict=True)
            for name, entry in servers.items()}


def _read_json(path: Path, text: bytes | None = None) -> dict[str, Any]:
    data = read_config_file(path, text)
    servers = data.get("mcpServers", {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'{path}: expected {{"mcpServers": {{NAME: {{...}}}}}}')
    return servers


def _mcp_json_names(path: Path, text: bytes) -> list[str]:
    try:
        return list(_read_json(path, text))
    except ConfigError:
        return ["(unreadable)"]


def _from_mcp_json(path: Path, environ: Mapping[str, str], text: bytes) -> dict[str, ServerSpec | None]:
    # Other tools read the same file and add keys of their own: those are left alone.
    return {name: _spec(name, entry, f"{path}: {name}", str(path), environ, "workspace", strict=False)
            for name, entry in _read_json(path, text).items()}


def _spec(name: str, entry: Any, where: str, source: str, environ: Mapping[str, str], owner: Owner,
          *, strict: bool) -> ServerSpec | None:
    """One server entry, checked; None when it is switched off (`enabled = false`)."""
    if not name or not isinstance(entry, dict):
        raise ConfigError(f"{where}: a server is a table of settings ({', '.join(KEYS)})")
    unknown = sorted(set(entry) - set(KEYS))
    if strict and unknown:
        raise ConfigError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(KEYS)})")
    if entry.get("enabled", True) is False:
        return None
    kind = entry.get("type") or ("http" if "url" in entry else "stdio")
    if kind == "sse":
        raise ConfigError(f"{where}: the SSE transport is not supported; use the server's streamable HTTP "
                          'endpoint (type "http")')
    if kind not in _TRANSPORTS:
        raise ConfigError(f"{where}: type must be stdio or http, not {kind!r}")
    transport = _TRANSPORTS[kind]

    def text(key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {key} must be a string, got {value!r}")
        return _expand(value, environ, f"{where}: {key}")

    def strings(key: str) -> tuple[str, ...]:
        value = entry.get(key, [])
        if not isinstance(value, list):
            raise ConfigError(f"{where}: {key} must be a list of strings")
        return tuple(text(key, v) for v in value)

    def table(key: str) -> dict[str, str]:
        value = entry.get(key, {})
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: {key} must be a table of strings")
        return {str(k): text(f"{key}.{k}", v) for k, v in value.items()}

    timeout = entry.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise ConfigError(f"{where}: timeout_s must be a positive number of seconds, got {timeout!r}")
    allow = entry.get("allow", [])
    if not isinstance(allow, list) or not all(isinstance(v, str) for v in allow):
        raise ConfigError(f"{where}: allow must be a list of tool names (or patterns such as \"get_*\")")
    sandbox = entry.get("sandbox")
    if sandbox is not None and not isinstance(sandbox, bool):
        raise ConfigError(f"{where}: sandbox must be true or false, got {sandbox!r}")
    common: dict[str, Any] = {"name": name, "transport": transport, "source": source, "allow": tuple(allow),
                              "timeout_s": float(timeout) if timeout is not None else None, "owner": owner,
                              "sandbox": sandbox}
    if transport == "http":
        url = text("url", entry.get("url", ""))
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: url must be an http:// or https:// address, got {url!r}")
        return ServerSpec(url=url, headers=table("headers"), **common)
    command = text("command", entry.get("command", ""))
    if not command.strip():
        raise ConfigError(f"{where}: a stdio server needs a command (or a url for an HTTP server)")
    cwd = entry.get("cwd")
    return ServerSpec(command=command, args=strings("args"), env=table("env"),
                      cwd=text("cwd", cwd) if cwd is not None else None, **common)


def _expand(value: str, environ: Mapping[str, str], where: str) -> str:
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found is not None and (found != "" or default is None):
            return found
        if default is not None:
            return default
        raise ConfigError(f"{where}: ${{{name}}} is not set (give it a value, or write ${{{name}:-default}})")

    return VARIABLE.sub(one, value)
