"""`scribe config`: the effective settings of this workspace, and where each one comes from."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer

from .exits import cli_errors
from .visible import visible


def config(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object: setting -> {value, source}.")] = False,
) -> None:
    """Show every setting's value and source: a SCRIBE_* variable, a config file, or the default.

    Strongest first: flags, SCRIBE_<NAME> environment variables, <workspace>/.scribe/config.toml
    (once you trust the workspace: `scribe trust`), ~/.config/scribe/config.toml, defaults. The
    permission mode is shown for each front end: left at its default, the REPL starts in ask and
    `scribe run` in accept-edits; a configured ask holds in the REPL, and `scribe run` (where
    nobody can answer) uses accept-edits. Then whether the workspace is trusted and what of its
    own is ignored, the model's context window, the permission rules and the file each came from,
    and what protects scribe from the commands it runs: the sandbox in force on this machine, what
    it covers and what it does not.
    """
    from scribe.agent.window_facts import learned_window, window_here
    from scribe.settings.files import find_workspace, read_config, trust_of
    from scribe.settings.hooks import describe, read_hooks
    from scribe.settings.prices import read_prices
    from scribe.settings.protection import protection_for
    from scribe.settings.rules import describe_rules, read_rules
    from scribe.settings.untrusted import ignored_line
    from scribe.settings.values import explain_settings, modes_by_front_end

    from .repl.stats import window_text

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        trust = trust_of(workspace)
        config = read_config(workspace, trust)
        settings, origin = explain_settings(workspace, config=config)
        read = [path for path, _ in config.parsed]
        prices = read_prices(config)
        hooks = read_hooks(workspace, config)
        rules = read_rules(config)
    workspace_line = (f"workspace {workspace}: " + (ignored_line(trust) if trust.ignored else trust.reason))
    values = dataclasses.asdict(settings)
    modes = modes_by_front_end(settings, origin)
    protection = protection_for(workspace, settings)
    window, limits = window_here(workspace, settings)
    learned = learned_window(workspace)
    if as_json:
        shown_json = {name: {"value": list(v) if isinstance(v, tuple) else v, "source": origin[name]}
                      for name, v in values.items()}
        shown_json["permission_mode"]["by_front_end"] = modes
        # Not settings: what the sandbox setting gives on this machine, and the model's context
        # window with the thresholds it sets, as detected now; and the configured prices.
        shown_json["command_protection"] = {"value": protection.record(), "source": "detected"}
        shown_json["workspace_trust"] = {"value": {"trusted": trust.trusted, "ignored": sorted(trust.files) if
                                                   trust.ignored else [], "reason": trust.reason},
                                         "source": str(workspace)}
        shown_json["context_window"] = {"value": {
            "tokens": window.tokens if window else None, "source": window.source if window else None,
            "observe_tokens": limits.observe, "reflect_tokens": limits.reflect,
            "side_call_tokens": limits.side_call,
            "learned": {"session": learned[0], "tokens": learned[1].tokens, "source": learned[1].source}
            if learned else None}, "source": "detected"}
        shown_json["prices"] = {"value": prices, "source": "config"}
        shown_json["hooks"] = {"value": [{"event": h.event, "matcher": h.matcher, "command": h.command,
                                          "owner": h.owner, "timeout_s": h.timeout_s, "pass_env": list(h.pass_env),
                                          "file": h.source} for h in hooks.specs], "source": "config"}
        shown_json["permission_rules"] = {"value": [{"verdict": r.verdict, "rule": r.text, "source": r.source}
                                                    for r in rules], "source": "config"}
        print(json.dumps(shown_json, indent=2))
        return
    width = max(map(len, values))
    for name, value in values.items():
        shown = ", ".join(value) if isinstance(value, tuple) else value
        if name == "permission_mode":
            shown = value if modes["repl"] == modes["run"] else f"{modes['repl']} (REPL), {modes['run']} (scribe run)"
        print(f"{name:<{width}}  {shown!s:<24}  {origin[name]}")
    print(f"\nfiles read: {', '.join(map(str, read))} (when present)")
    print(visible(workspace_line))
    print(f"\ncontext window of {settings.model}: {window_text(window, limits)}")
    if learned is not None:
        print(f"the latest session, {learned[0]}, learned {learned[1].describe()}")
    for model, rates in prices.items():
        print(f"prices of {model} (USD per million tokens): " + ", ".join(f"{k} {v:g}" for k, v in rates.items()))
    for line in describe(hooks.specs):
        print(visible(f"hook {line}"))
    if rules:
        print("\npermission rules (deny first, then ask, then allow; the mode decides the rest):")
        for line in describe_rules(rules):
            print(visible(f"  {line}"))
    print()
    for line in protection.lines():
        print(line)
