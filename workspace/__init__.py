"""The workspace: the files around a session and what guards them: the watcher and its
changes, git (facts, commits, diff, undo), run as a command runs (in the sandbox, without
secrets, with no repository-provided program), the workspace's git folders and the git
configuration a command planted, the command sandbox, its limits and its leftovers, the
environment without secrets, the confined writer and atomic writes.

May import: scribe.log."""
