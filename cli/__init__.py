"""The command line: the typer app, the interactive session, `scribe run`, `scribe log` and
the session page. The only package that prints; it renders the agent's events and parses
what people type.

May import: every other package."""
