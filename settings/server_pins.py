"""What a trusted workspace's own MCP servers run, against what the person confirmed: computed
for `scribe trust` (which records all of them) and for the REPL's question about one server
whose files changed (tools/mcp/pins.py hashes the files; settings/trust.py keeps them).

Only stdio servers the workspace defines are pinned: an HTTP server runs nothing on this
machine, and the person's own servers run as configured."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scribe.tools.mcp.pins import ContentPin, content_pin, what_changed
from scribe.tools.mcp.spec import ServerSpec

from .files import ConfigError, ConfigFiles, read_config
from .mcp_servers import mcp_config
from .trust import WorkspaceTrust
from .values import Settings, load_settings


@dataclass(frozen=True)
class ServerPin:
    spec: ServerSpec
    pin: ContentPin
    # What differs from what the person confirmed (None: nothing).
    changed: str | None


def workspace_servers(workspace: Path, settings: Settings, config: ConfigFiles) -> list[ServerPin]:
    """The workspace's stdio servers as they would start under `config`, each with its files now."""
    found = []
    for spec in mcp_config(workspace, settings, config=config).servers:
        if spec.owner == "workspace" and spec.transport == "stdio":
            pin = content_pin(spec, workspace)
            confirmed = dict(spec.confirmed) if spec.confirmed is not None else None
            found.append(ServerPin(spec, pin, what_changed(confirmed, pin)))
    return found


def pins_to_trust(workspace: Path, trust: WorkspaceTrust) -> tuple[dict[str, dict[str, str]], list[ServerPin]]:
    """What `scribe trust` records for the workspace's servers (as trusting it makes them apply),
    and each server with what changed since it was last confirmed. A config that cannot be read
    starts no server: nothing is recorded for it."""
    granted = WorkspaceTrust(trust.workspace, trust.files, trust.fingerprint, True, "trusted now")
    try:
        config = read_config(workspace, granted)
        servers = workspace_servers(workspace, load_settings(workspace, config=config), config)
    except ConfigError:
        return {}, []
    return {s.spec.name: s.pin.as_dict() for s in servers}, servers
