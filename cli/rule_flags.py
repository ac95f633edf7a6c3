"""`--allowed-tools` and `--disallowed-tools`, as `scribe run` and the interactive session take
them (Claude Code's spelling, `--allowedTools` too): permission rules for this run only. (Their
help is in cli/app.py, which `scribe --help` reads without importing this.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scribe.settings.rules import Rule

def rules_of(allowed: list[str] | None, disallowed: list[str] | None) -> tuple[Rule, ...]:
    """The rules the flags give (a rule that cannot be read is a ConfigError naming the flag)."""
    if not allowed and not disallowed:
        return ()
    from scribe.settings.rules import flag_rules

    return tuple(flag_rules(allowed or (), disallowed or ()))
