"""Memory compression as the agent runs it: one Compressor (compressor.py) composed of what it
measures of a session (sizes.py), which route each side call takes (routes.py), what it does when
a request does not fit the window (window_room.py) and without a model (without_model.py); and a
compression between turns, in a thread, on a draft of the session (ahead.py).

May import: scribe.log, scribe.context, scribe.memory, scribe.tools, scribe.settings, scribe.model,
scribe.agent.protocol, scribe.agent.session."""
