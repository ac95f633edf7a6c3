"""Which tool calls run without asking, in each permission mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from scribe.tools.base import ToolKind

Verdict = Literal["allow", "ask", "deny"]

# An MCP tool acts wherever its server reaches, so it asks like a command; one its server marks
# read-only (a hint scribe cannot check) runs where reads do, except in `ask`, which asks for
# every MCP call.
# A web fetch reaches out of the machine (and may carry what the session read, in its URL), so it
# asks as a command does: refused in read-only, asked in `ask` and `accept-edits` (which accepts
# file edits, nothing more, as in Claude Code). One of a domain on the person's allow-list
# (`web_fetch_domains`, "web-listed") runs without asking, except in read-only.
_TABLE: dict[str, dict[ToolKind, Verdict]] = {
    "read-only": {"read": "allow", "edit": "deny", "command": "deny", "mcp": "deny", "mcp-read": "allow",
                  "web": "deny", "web-listed": "deny"},
    "ask": {"read": "allow", "edit": "ask", "command": "ask", "mcp": "ask", "mcp-read": "ask",
            "web": "ask", "web-listed": "allow"},
    "accept-edits": {"read": "allow", "edit": "allow", "command": "ask", "mcp": "ask", "mcp-read": "allow",
                     "web": "ask", "web-listed": "allow"},
    "full-auto": {"read": "allow", "edit": "allow", "command": "allow", "mcp": "allow", "mcp-read": "allow",
                  "web": "allow", "web-listed": "allow"},
}
# The least permissive mode that runs each kind without asking: named in refusals.
_NEEDS = {"edit": "accept-edits", "command": "full-auto", "mcp": "full-auto", "mcp-read": "accept-edits",
          "web": "full-auto", "web-listed": "accept-edits"}


@dataclass
class PermissionPolicy:
    mode: str
    # Tools the person approved "always" for the rest of this session (REPL).
    always: set[str] = field(default_factory=set)
    # Tools the config lets run without asking (an MCP server's `allow` list). Unlike "always",
    # they never override a refusal: read-only mode stays read-only.
    allowed: frozenset[str] = frozenset()
    # How the person changes the mode, named in refusals: the flag, or the REPL's /mode.
    how_to_allow: str = "--permission-mode"

    def verdict(self, tool: str, kind: ToolKind) -> Verdict:
        if tool in self.always:
            return "allow"
        verdict = _TABLE[self.mode][kind]
        return "allow" if verdict == "ask" and tool in self.allowed else verdict

    def refusal(self, tool: str, kind: ToolKind, *, asked: bool) -> str:
        needed = _NEEDS.get(kind, "full-auto")
        if asked:
            return f"{tool} was declined by the user"
        if kind == "mcp" and self.mode == "read-only":
            return (f"{tool} is not allowed in permission mode 'read-only' (its MCP server does not mark it "
                    f"read-only); the user can allow it with {self.how_to_allow} {needed}")
        if kind == "mcp":
            return (f"{tool} is not allowed in permission mode '{self.mode}'; the user can allow it with "
                    f"{self.how_to_allow} {needed}, or list it in the MCP server's `allow` setting")
        if kind == "web" and self.mode != "read-only":
            return (f"{tool} is not allowed in permission mode '{self.mode}'; the user can allow it with "
                    f"{self.how_to_allow} {needed}, or list the domain in the web_fetch_domains setting")
        return (f"{tool} is not allowed in permission mode '{self.mode}'; "
                f"the user can allow it with {self.how_to_allow} {needed}")
