"""The hooks a person configures: commands scribe runs at fixed points of a session, read from the
`[[hooks.EVENT]]` tables of the config files that apply (settings/files.py), so a workspace's own
hooks apply only when the workspace is trusted, as its other settings do.

    [[hooks.pre_tool_use]]
    matcher = "run_command"        # a regular expression the whole tool name must match; "*" or none: all
    command = "~/bin/guard.sh"     # run by bash in the workspace, the event as JSON on stdin
    timeout_s = 30                 # ended after this long (default 60)
    pass_env = ["GITHUB_TOKEN"]    # secret variables it may see; only in the person's own config

Each hook remembers whose it is: the person's own (their config file, or a SCRIBE_HOME one) or
the workspace's (its `.scribe/config.toml`, trusted). Running them is agent/hooks/runner.py's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .files import ConfigError, ConfigFiles, own_config_path
from .values import clipped_repr

HookName = Literal["pre_tool_use", "post_tool_use", "user_prompt_submit", "stop", "session_start", "session_end",
                   "pre_compact", "subagent_stop", "notification"]
HOOK_NAMES: tuple[HookName, ...] = ("pre_tool_use", "post_tool_use", "user_prompt_submit", "stop", "session_start",
                                    "session_end", "pre_compact", "subagent_stop", "notification")
# Events about one tool call (the matcher is on the tool's name), and about one sub-agent (on its
# kind): only these take a matcher.
TOOL_HOOKS = ("pre_tool_use", "post_tool_use", "subagent_stop")
DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 600.0
KEYS = ("matcher", "command", "timeout_s", "pass_env")


@dataclass(frozen=True)
class HookSpec:
    """One configured hook."""

    event: HookName
    command: str
    # The person's own, or the workspace's (run in the sandbox, never with a secret).
    owner: Literal["person", "workspace"]
    source: str  # the config file it came from
    matcher: str = "*"
    timeout_s: float = DEFAULT_TIMEOUT_S
    pass_env: tuple[str, ...] = ()
    _pattern: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    def matches(self, tool: str | None) -> bool:
        if self.event not in TOOL_HOOKS or self._pattern is None:
            return True
        return tool is not None and self._pattern.fullmatch(tool) is not None


@dataclass(frozen=True)
class Hooks:
    """Every configured hook, in the order of the config files (the person's first)."""

    specs: tuple[HookSpec, ...] = ()

    def for_event(self, event: HookName, tool: str | None = None) -> list[HookSpec]:
        return [h for h in self.specs if h.event == event and h.matches(tool)]

    def __bool__(self) -> bool:
        return bool(self.specs)


NO_HOOKS = Hooks()


def read_hooks(workspace: Path, config: ConfigFiles) -> Hooks:
    """The `[[hooks.EVENT]]` tables of the config files that apply, checked; a mistake is a
    ConfigError naming the file and the table."""
    own = own_config_path(workspace)
    specs: list[HookSpec] = []
    for path, data in config.parsed:
        owner: Literal["person", "workspace"] = "workspace" if own is not None and path == own else "person"
        specs += _hooks_in(path, data.get("hooks"), owner)
    return Hooks(tuple(specs))


def _hooks_in(path: Path, table: Any, owner: Literal["person", "workspace"]) -> list[HookSpec]:
    if table is None:
        return []
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: hooks must be [[hooks.EVENT]] tables ({', '.join(HOOK_NAMES)})")
    unknown = sorted(set(table) - set(HOOK_NAMES))
    if unknown:
        raise ConfigError(f"{path}: unknown hook event {', '.join(unknown)} (known: {', '.join(HOOK_NAMES)})")
    specs = []
    for event in HOOK_NAMES:
        entries = table.get(event, [])
        if isinstance(entries, dict):
            entries = [entries]
        if not isinstance(entries, list):
            raise ConfigError(f"{path}: hooks.{event} must be [[hooks.{event}]] tables")
        for number, entry in enumerate(entries, 1):
            specs.append(_spec(event, entry, f"{path}: hooks.{event} #{number}", str(path), owner))
    return specs


def _spec(event: HookName, entry: Any, where: str, source: str, owner: Literal["person", "workspace"]) -> HookSpec:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a table with command (and matcher, timeout_s, pass_env)")
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(KEYS)})")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{where}: command must be a non-empty string (a bash command line)")
    matcher = entry.get("matcher", "*")
    if not isinstance(matcher, str):
        raise ConfigError(f"{where}: matcher must be a string (a regular expression on the tool name)")
    if matcher.strip() and event not in TOOL_HOOKS:
        if matcher.strip() != "*":
            raise ConfigError(f"{where}: only {', '.join(TOOL_HOOKS)} hooks take a matcher")
    pattern = None
    if event in TOOL_HOOKS and matcher.strip() not in ("", "*"):
        try:
            pattern = re.compile(matcher.strip())
        except re.error as exc:
            raise ConfigError(f"{where}: matcher {matcher!r} is not a regular expression ({exc})") from None
    timeout = entry.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise ConfigError(f"{where}: timeout_s must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}, "
                          f"got {clipped_repr(timeout)}")
    pass_env = _names(entry.get("pass_env", []), where)
    if pass_env and owner == "workspace":
        raise ConfigError(f"{where}: pass_env is honoured only in your own config file; a workspace's hooks never "
                          "see a secret (move the hook to ~/.config/scribe/config.toml)")
    return HookSpec(event, command, owner, source, matcher.strip() or "*", float(timeout), pass_env, pattern)


def _names(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: pass_env must be a list of environment variable names")
    return tuple(value)


def describe(specs: Sequence[HookSpec]) -> list[str]:
    """One line per hook, for `scribe config`."""
    lines = []
    for spec in specs:
        matcher = f" [{spec.matcher}]" if spec.event in TOOL_HOOKS else ""
        passed = f"; passes {', '.join(spec.pass_env)}" if spec.pass_env else ""
        where = "the workspace's, in the sandbox" if spec.owner == "workspace" else "yours"
        lines.append(f"{spec.event}{matcher}: {spec.command} ({where}, {spec.timeout_s:g} s{passed}; {spec.source})")
    return lines
