"""A session of the agent: its log and the one writer that appends to it (session.py), starting a
new one and reopening one (start.py), what a reopen summarises without a model (unheld.py), the
instructions it starts with (instructions.py), whether its server takes tools (abilities.py), and
a draft of it that compression works on off the main thread (draft.py).

May import: scribe.log, scribe.context, scribe.memory, scribe.workspace, scribe.tools,
scribe.settings, scribe.model, scribe.agent.protocol."""
