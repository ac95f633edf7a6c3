"""scribe's own git. Every git process it starts is GitPython's `Git` with `execute` confined
(confined.py): git found where a workspace cannot have planted it, run in the sandbox under the
workspace's Protection (read-only for a question, the workspace writable for a commit or an
undo), without secrets or foreign GIT_* variables, the readers GitPython keeps open ended with
the call; run.py adds the overrides that turn off every program a repository's configuration
names and is what the rest of scribe calls. On them: the workspace's git folders as git names
them and the Protection built around them (folders.py), facts, auto-commits and diffs
(repository.py), taking back scribe's commit (undo.py), git configuration a command planted
(planted.py), and the lock sessions take around moving HEAD (commitlock.py).

May import: scribe.workspace.sandbox, scribe.workspace.writers."""
