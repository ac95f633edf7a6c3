"""The tools the model calls: files, commands, listing, search, recall, and MCP servers' tools;
their arguments, results, paths and secrets' redaction.

May import: scribe.log, scribe.workspace."""
