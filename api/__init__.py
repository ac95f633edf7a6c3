"""The Python API: open a session of the agent core from a program, send messages, iterate the
events, answer approvals, cancel, close (session.py). `import scribe` exposes it.

May import: scribe.log, scribe.context, scribe.memory, scribe.workspace, scribe.tools,
scribe.settings, scribe.model, scribe.agent."""
