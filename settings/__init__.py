"""Settings and trust: the effective settings (flags > SCRIBE_* environment > workspace config >
user config > defaults), the config files that apply and reading them once, the trust a
workspace has been given (recorded outside it), what an untrusted workspace would change, the
configured MCP servers and price tables, and the protection the settings give a workspace's
commands.

May import: scribe.log, scribe.workspace, scribe.tools."""
