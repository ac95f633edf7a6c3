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
    permission_mode is left at its default.) Then what protects scribe from the commands it runs:
    the sandbox in force on this machine, what it covers and what it does not.
    """
    from scribe.agent.config import explain_settings, find_workspace, read_prices, state_dir, user_config_path
    from scribe.agent.protection import protection_for
    from scribe.agent.runtime import learned_window, window_here

    from .repl.stats import window_text

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        settings, origin = explain_settings(workspace)
        prices = read_prices(workspace)
    values = dataclasses.asdict(settings)
    protection = protection_for(workspace, settings)
    window, limits = window_here(workspace, settings)
    learned = learned_window(workspace)
    if as_json:
        shown_json = {name: {"value": list(v) if isinstance(v, tuple) else v, "source": origin[name]}
                      for name, v in values.items()}
        # Not settings: what the sandbox setting gives on this machine, and the model's context
        # window with the thresholds it sets, as detected now; and the configured prices.
        shown_json["command_protection"] = {"value": protection.record(), "source": "detected"}
        shown_json["context_window"] = {"value": {
            "tokens": window.tokens if window else None, "source": window.source if window else None,
            "observe_tokens": limits.observe, "reflect_tokens": limits.reflect,
            "side_call_tokens": limits.side_call,
            "learned": {"session": learned[0], "tokens": learned[1].tokens, "source": learned[1].source}
            if learned else None}, "source": "detected"}
        shown_json["prices"] = {"value": prices, "source": "config"}
        print(json.dumps(shown_json, indent=2))
        return
    width = max(map(len, values))
    for name, value in values.items():
        shown = ", ".join(value) if isinstance(value, tuple) else value
        print(f"{name:<{width}}  {shown!s:<24}  {origin[name]}")
    print(f"\nfiles read: {user_config_path()}, {state_dir(workspace) / 'config.toml'} (when present)")
    print(f"\ncontext window of {settings.model}: {window_text(window, limits)}")
    if learned is not None:
        print(f"the latest session, {learned[0]}, learned {learned[1].describe()}")
    for model, rates in prices.items():
        print(f"prices of {model} (USD per million tokens): " + ", ".join(f"{k} {v:g}" for k, v in rates.items()))
    print()
    for line in protection.lines():
        print(line)
