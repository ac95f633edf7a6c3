"""The agent: the turn loop, the model client (the official SDK, streaming, retries), the
session life cycle (start, continue, curate, pin MCP tools), permissions, settings, and
running compression and curation at the right moments. Yields events; never prints.

May import: scribe.log, scribe.context, scribe.memory, scribe.workspace, scribe.tools."""
