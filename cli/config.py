"""`scribe config`: the effective settings of this workspace, and where each one comes from."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer

from .errors import cli_errors


def config(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object: setting -> {value, source}.")] = False,
) -> None:
    """Show every setting's value and source: a SCRIBE_* variable, a config file, or the default.

    Strongest first: flags, SCRIBE_<NAME> environment variables, <workspace>/.scribe/config.toml,
    ~/.config/scribe/config.toml, defaults. The permission mode is shown for each front end: left
    at its default, the REPL starts in ask and `scribe run` in accept-edits; a configured ask
    holds in the REPL, and `scribe run` (where nobody can answer) uses accept-edits. Then what
    protects scribe from the commands it runs: the sandbox in force on this machine, what it
    covers and what it does not.
    """
    from scribe.agent.config import (
        explain_settings,
        find_workspace,
        modes_by_front_end,
        state_dir,
        user_config_path,
    )
    from scribe.agent.protection import protection_for

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        settings, origin = explain_settings(workspace)
    values = dataclasses.asdict(settings)
    modes = modes_by_front_end(settings, origin)
    protection = protection_for(workspace, settings)
    if as_json:
        shown_json = {name: {"value": list(v) if isinstance(v, tuple) else v, "source": origin[name]}
                      for name, v in values.items()}
        shown_json["permission_mode"]["by_front_end"] = modes
        # Not a setting: what the sandbox setting gives on this machine, as detected now.
        shown_json["command_protection"] = {"value": protection.record(), "source": "detected"}
        print(json.dumps(shown_json, indent=2))
        return
    width = max(map(len, values))
    for name, value in values.items():
        shown = ", ".join(value) if isinstance(value, tuple) else value
        if name == "permission_mode":
            shown = value if modes["repl"] == modes["run"] else f"{modes['repl']} (REPL), {modes['run']} (scribe run)"
        print(f"{name:<{width}}  {shown!s:<24}  {origin[name]}")
    print(f"\nfiles read: {user_config_path()}, {state_dir(workspace) / 'config.toml'} (when present)")
    print()
    for line in protection.lines():
        print(line)
