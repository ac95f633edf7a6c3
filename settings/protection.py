"""The protection a workspace's commands run under, from its settings: the sandbox unless
`sandbox = false`, with `allowed_paths` writable and the state folder hidden."""

from __future__ import annotations

from pathlib import Path

from scribe.settings.files import state_dir
from scribe.settings.values import Settings, load_settings
from scribe.workspace.git.folders import command_protection
from scribe.workspace.sandbox.protection import Protection


def protection_here(workspace: Path) -> Protection:
    """The protection of `workspace` under its settings as they are (`scribe diff`, `scribe undo`)."""
    return protection_for(workspace, load_settings(workspace))


def protection_for(workspace: Path, settings: Settings) -> Protection:
    """Worked out as the workspace is now, never remembered across sessions: a command of an
    earlier session may have changed what its git folders are (a `.git` it wrote)."""
    return command_protection(workspace.resolve(), allowed_roots=[Path(p).expanduser() for p in settings.allowed_paths],
                              state_dir=state_dir(workspace), enabled=settings.sandbox,
                              max_processes=settings.command_max_processes,
                              max_memory_mb=settings.command_max_memory_mb)
