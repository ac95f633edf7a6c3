"""Curating the project notes: what one session taught, merged into the notes (curator.py), and
the curation of earlier sessions off the person's path (background.py).

May import: scribe.log, scribe.memory, scribe.settings, scribe.model, scribe.agent.protocol,
scribe.agent.session."""
