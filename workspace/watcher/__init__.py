"""Files that change in the workspace while a session runs, when the agent's own file tools did
not change them: the watcher (watcher.py), its vocabulary and debouncing (changes.py: the
`ChangeSource` the agent loop drains), and which paths git ignores or tracks (gitignore.py),
asked through the git query the caller hands in, so the watcher runs no git of its own.

May import: scribe.workspace.writers."""
