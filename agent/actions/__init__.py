"""What scribe does in the workspace for the person or at a turn's end, beside the model's tools:
undo and rewind (undo.py), auto-commit (autocommit.py), attaching files and images (attach.py),
and the person's own `!command` (shell.py).

May import: scribe.log, scribe.context, scribe.tools, scribe.workspace, scribe.settings,
scribe.agent.protocol, scribe.agent.session, scribe.agent.hooks."""
