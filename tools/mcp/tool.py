"""An MCP server's tool, as the agent loop sees any tool: a definition, a kind for the
permission policy, and `run`, which calls through the hub."""

from __future__ import annotations

import json
from typing import Any

from scribe.tools.base import CommandInterrupted, ToolContext, ToolKind, ToolOutput

from .catalog import ListedTool
from .content import result_parts
from .hub import McpHub

SUMMARY_CHARS = 100


class McpTool:
    """`definition` is the one pinned in the session event, sent as it is; `tool` is the
    server's own name for it. `kind` is "mcp-read" when the server marks it read-only."""

    def __init__(self, hub: McpHub, server: str, listed: ListedTool) -> None:
        self.hub, self.server, self.tool = hub, server, listed.tool
        self.definition = listed.definition
        self.name = listed.name
        self.kind: ToolKind = "mcp-read" if listed.read_only else "mcp"
        self.description = str(listed.definition.get("description", ""))
        self.input_schema: dict[str, Any] = listed.definition["input_schema"]

    def summary(self, args: dict[str, Any]) -> str:
        shown = json.dumps(args, ensure_ascii=False, separators=(",", ":")) if args else ""
        if len(shown) > SUMMARY_CHARS:
            shown = shown[: SUMMARY_CHARS - 1] + "…"
        return f"{self.server} · {self.tool} {shown}".rstrip()

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            result = self.hub.call(self.server, self.tool, args, cancelled=ctx.cancelled)
        except KeyboardInterrupt as stop:  # Ctrl-C, or a signal that ends scribe (str says which)
            why = str(stop) or "cancelled by the user"
            raise CommandInterrupted(ToolOutput(
                f"[{why}: the call to {self.tool} on MCP server '{self.server}' was stopped]",
                is_error=True), stop) from None
        parts = result_parts(result, ctx.output_cap_bytes)
        return ToolOutput(parts.text, is_error=parts.is_error, dropped_bytes=parts.dropped_bytes,
                          blocks=parts.blocks, attachments=parts.attachments)
