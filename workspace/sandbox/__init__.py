"""Where a program scribe starts because of the workspace runs, and what it gets: bubblewrap and
the smallest sandbox of all, the read-only one (bwrap.py, with `Confinement`, the seam scribe's
git runs through); the Protection commands, hooks, MCP servers and scribe's own git run under
(protection.py: the workspace writable, its git folders' configuration read-only, built around
the git folders git names, which the caller finds); the limits on a command's processes and
memory (limits.py); what ends a command's leftovers without a sandbox (leftovers.py); the
environment without secrets and the programs found where a workspace cannot have planted them
(environment.py).

Imports nothing of the workspace: scribe's git sits above it and runs in it."""
