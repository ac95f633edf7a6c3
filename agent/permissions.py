"""Which tool calls run without asking, in each permission mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from scribe.tools.base import ToolKind

Verdict = Literal["allow", "ask", "deny"]

_TABLE: dict[str, dict[ToolKind, Verdict]] = {
    "read-only": {"read": "allow", "edit": "deny", "command": "deny"},
    "ask": {"read": "allow", "edit": "ask", "command": "ask"},
    "accept-edits": {"read": "allow", "edit": "allow", "command": "ask"},
    "full-auto": {"read": "allow", "edit": "allow", "command": "allow"},
}
# The least permissive mode that runs each kind without asking: named in refusals.
_NEEDS = {"edit": "accept-edits", "command": "full-auto"}


@dataclass
class PermissionPolicy:
    mode: str
    # Tools the person approved "always" for the rest of this session (REPL).
    always: set[str] = field(default_factory=set)
    # How the person changes the mode, named in refusals: the flag, or the REPL's /mode.
    how_to_allow: str = "--permission-mode"

    def verdict(self, tool: str, kind: ToolKind) -> Verdict:
        if tool in self.always:
            return "allow"
        return _TABLE[self.mode][kind]

    def refusal(self, tool: str, kind: ToolKind, *, asked: bool) -> str:
        needed = _NEEDS.get(kind, "full-auto")
        if asked:
            return f"{tool} was declined by the user"
        return (f"{tool} is not allowed in permission mode '{self.mode}'; "
                f"the user can allow it with {self.how_to_allow} {needed}")
