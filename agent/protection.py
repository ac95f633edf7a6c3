"""The protection a workspace's commands run under, from its settings: the sandbox unless
`sandbox = false`, with `allowed_paths` writable and the state folder hidden."""

from __future__ import annotations

from pathlib import Path

from scribe.settings.files import state_dir
from scribe.settings.values import Settings
from scribe.workspace.sandbox import Protection, command_protection


def protection_for(workspace: Path, settings: Settings) -> Protection:
    """Worked out as the workspace is now, never remembered across sessions: a command of an
    earlier session may have changed what its git folders are (a `.git` it wrote)."""
    return command_protection(workspace.resolve(), allowed_roots=[Path(p).expanduser() for p in settings.allowed_paths],
                              state_dir=state_dir(workspace), enabled=settings.sandbox)
