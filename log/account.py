"""What scribe keeps for the person's account, outside every workspace: the folder
`$XDG_STATE_HOME/scribe` (else `~/.local/state/scribe`), 0700.

It holds the key that seals session logs and the last seal scribe wrote for each log (log/seal.py),
and the bytecode of the MCP servers that run outside the sandbox (tools/mcp/link.py). Each is
something a workspace must not be able to read or write: every sandbox hides the folder
(workspace/sandbox/bwrap.py), so no command, hook, MCP server or git call in the sandbox sees the key or
changes a record.

Another user must not be able to plant what scribe reads here: the folder is used only when it is
a real folder (not a link) owned by this account that no one else may write.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from scribe.log.private import make_private_folder


class AccountFolderError(OSError):
    """The account's folder cannot be made, or is not one only this account controls."""


def account_folder() -> Path:
    """Where the folder is (it may not exist yet)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser().absolute() / "scribe"


def own_account_folder() -> Path:
    """The folder, made (0700) if it is missing, and checked: a real folder of this account's,
    writable by no one else. Raises AccountFolderError."""
    folder = account_folder()
    try:
        make_private_folder(folder)
        info = os.lstat(folder)
    except OSError as exc:
        raise AccountFolderError(f"cannot make scribe's folder {folder}: {exc.strerror or exc}") from None
    check_private(folder, info, "folder")
    return folder


def check_private(path: Path, info: os.stat_result, what: str) -> None:
    """Raise AccountFolderError unless `path` (whose lstat is `info`) is this account's own `what`
    (a "folder" or a "file"), and no other account may write it (nor read it, for a file)."""
    kind_ok = stat.S_ISDIR(info.st_mode) if what == "folder" else stat.S_ISREG(info.st_mode)
    others = 0o022 if what == "folder" else 0o077
    if not kind_ok or info.st_uid != os.geteuid() or info.st_mode & others:
        raise AccountFolderError(
            f"{path} is not a {what} only this account controls (owner uid {info.st_uid}, mode "
            f"{stat.S_IMODE(info.st_mode):o}); scribe keeps its key there: move it away, or set XDG_STATE_HOME "
            "to a folder of your own")
