"""The workspace: the files around a session and what guards them, in four folders by idea,
each importing only the folders named in its own docstring (tests/test_layers.py holds it):

- `writers/`: every file scribe writes for the agent or the person, through one confined write
  loop (never through a link, never outside its root), and atomic writes by path.
- `sandbox/`: where a program scribe starts because of the workspace runs (bubblewrap, its
  read-only sandbox, the Protection commands get, their limits and leftovers) and the
  environment it gets (no secrets).
- `git/`: scribe's own git, through GitPython with its git executable confined to the sandbox;
  the workspace's git folders and the Protection built around them; facts, commits, diffs and
  undo; git configuration a command planted. Imports `writers/` and `sandbox/`.
- `watcher/`: files changed outside the agent's tools, and which of them git ignores (asked
  through the git query the caller hands in). Imports `writers/`.

Beside them, `images.py`: image files a person attaches, read with care. It imports none of
the folders.

May import: scribe.log."""
