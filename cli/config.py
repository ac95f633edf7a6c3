"""`scribe config`: the effective settings of this workspace, and where each one comes from."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer

from .errors import cli_errors
from .visible import visible


def config(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object: setting -> {value, source}.")] = False,
) -> None:
    """Show every setting's value and source: a SCRIBE_* variable, a config file, or the default.

    Strongest first: flags, SCRIBE_<NAME> environment variables, <workspace>/.scribe/config.toml
    (once you trust the workspace: `scribe trust`), ~/.config/scribe/config.toml, defaults.
    (Headless runs use accept-edits and the REPL ask when permission_mode is left at its
    default.) Then whether the workspace is trusted and what of its own is ignored, and what
    protects scribe from the commands it runs: the sandbox in force on this machine, what it
    covers and what it does not.
    """
    from scribe.agent.config import config_files, explain_settings, find_workspace, trust_of
    from scribe.agent.protection import protection_for
    from scribe.agent.untrusted import ignored_line

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        trust = trust_of(workspace)
        settings, origin = explain_settings(workspace, trust=trust)
        read = list(config_files(workspace, trust))
    workspace_line = (f"workspace {workspace}: " + (ignored_line(trust) if trust.ignored else trust.reason))
    values = dataclasses.asdict(settings)
    protection = protection_for(workspace, settings)
    if as_json:
        shown_json = {name: {"value": list(v) if isinstance(v, tuple) else v, "source": origin[name]}
                      for name, v in values.items()}
        # Not a setting: what the sandbox setting gives on this machine, as detected now.
        shown_json["command_protection"] = {"value": protection.record(), "source": "detected"}
        shown_json["workspace_trust"] = {"value": {"trusted": trust.trusted, "ignored": sorted(trust.files) if
                                                   trust.ignored else [], "reason": trust.reason},
                                         "source": str(workspace)}
        print(json.dumps(shown_json, indent=2))
        return
    width = max(map(len, values))
    for name, value in values.items():
        shown = ", ".join(value) if isinstance(value, tuple) else value
        print(f"{name:<{width}}  {shown!s:<24}  {origin[name]}")
    print(f"\nfiles read: {', '.join(map(str, read))} (when present)")
    print(visible(workspace_line))
    print()
    for line in protection.lines():
        print(line)
