"""The person's hooks at their points of a turn: what each outcome does (runner.py), on the
process runner the hooks share with commands (process.py).

May import: scribe.log, scribe.settings, scribe.tools, scribe.workspace, scribe.agent.session."""
