"""scribe's own git, run as a command runs (run.py: in the sandbox under the workspace's
Protection, read-only for a question, the workspace writable for a commit or an undo, without
secrets, with every program a repository's configuration names turned off; several questions at
a time in one long-lived sandbox, server.py). On it: the workspace's git folders as git names
them and the Protection built around them (folders.py), facts, auto-commits and diffs
(repository.py), taking back scribe's commit (undo.py), git configuration a command planted
(planted.py), and the lock sessions take around moving HEAD (commitlock.py).

May import: scribe.workspace.sandbox, scribe.workspace.writers."""
