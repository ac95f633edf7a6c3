"""The protection a workspace's commands run under, from its settings: the sandbox unless
`sandbox = false`, with `allowed_paths` writable and the state folder hidden."""

from __future__ import annotations

from pathlib import Path

from scribe.tools.sandbox import Protection, command_protection

from .config import Settings, state_dir


def protection_for(workspace: Path, settings: Settings) -> Protection:
    return command_protection(workspace, allowed_roots=[Path(p).expanduser() for p in settings.allowed_paths],
                              state_dir=state_dir(workspace), enabled=settings.sandbox)
