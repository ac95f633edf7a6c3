"""The workspace: the files around a session and what guards them: the watcher and its
changes, git (facts, commits, diff, undo, run with no repository-provided program), the
command sandbox and its leftovers, atomic writes.

May import: scribe.log."""
