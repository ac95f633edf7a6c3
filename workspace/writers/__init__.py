"""Every file scribe writes for the agent or the person: the one confined write loop
(confined.py: a path resolved below its root without following a link in any component, the
file written, renamed over or removed relative to its open folder; write_file, edit_file, the
undos' restored files) and atomic writes by path for files the person names wherever they are
(atomic.py: a temporary file beside the target, flushed, renamed over it).

Imports nothing of the workspace."""
