"""The agent: the turn loop, the session life cycle (start, continue, curate, pin MCP tools),
assembling an agent for a front end, permissions, the workspace actions taken for the agent or
the person (undo, auto-commit, attachments, `!command`), and running compression and curation at
the right moments. Yields events; never prints.

May import: scribe.log, scribe.context, scribe.memory, scribe.workspace, scribe.tools,
scribe.settings, scribe.model."""
