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
    ~/.config/scribe/config.toml, defaults. (Headless runs use accept-edits and the REPL ask when
    permission_mode is left at its default.)
    """
    from scribe.agent.config import explain_settings, find_workspace, state_dir, user_config_path

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        settings, origin = explain_settings(workspace)
    values = dataclasses.asdict(settings)
    if as_json:
        print(json.dumps({name: {"value": list(v) if isinstance(v, tuple) else v, "source": origin[name]}
                          for name, v in values.items()}, indent=2))
        return
    width = max(map(len, values))
    for name, value in values.items():
        shown = ", ".join(value) if isinstance(value, tuple) else value
        print(f"{name:<{width}}  {shown!s:<24}  {origin[name]}")
    print(f"\nfiles read: {user_config_path()}, {state_dir(workspace) / 'config.toml'} (when present)")
