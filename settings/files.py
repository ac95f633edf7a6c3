"""Where scribe's config and state live, and which config files apply to a workspace, each read
once: the person's own (`~/.config/scribe/config.toml`), then the state folder's when it is the
person's own (SCRIBE_HOME moved outside the workspace) or the workspace's own and trusted
(settings/trust.py). Settings (settings/values.py), price tables and MCP servers (settings/mcp_servers.py)
are all taken from one `ConfigFiles`, so what applies is what trust fingerprinted, read once,
and the same for all three."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .trust import MCP_JSON, TRUST_FILE, TrustStore, WorkspaceTrust, fingerprint


class ConfigError(ValueError):
    """A config file or setting that cannot be used; the message names the file and the key."""


def user_config_dir() -> Path:
    """The person's own scribe folder: their config file and their trust file."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "scribe"


def user_config_path() -> Path:
    return user_config_dir() / "config.toml"


def trust_store() -> TrustStore:
    return TrustStore(user_config_dir() / TRUST_FILE)


def find_workspace(cwd: Path) -> Path:
    """The repository root when inside one, else the folder itself."""
    cwd = cwd.resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


# What scribe keeps in its state folder; in a workspace's own `.scribe` none may be a link.
STATE_ENTRIES = ("config.toml", "sessions", "notes.md", "notes.lock", "commit.lock", "history", "mcp", "commands",
                 "finishing.err")
# The workspace's custom commands (settings/commands.py), by their name in it.
WORKSPACE_COMMANDS = ".scribe/commands"
WORKSPACE_AGENTS = ".scribe/agents"
# Past these a command file, or a folder of them, is not read (a command is a prompt, not a book).
COMMAND_FILE_BYTES = 64 * 1024
COMMAND_FILES = 200


def state_dir(workspace: Path) -> Path:
    """The state folder: `<workspace>/.scribe`, or SCRIBE_HOME. A missing one is made when first
    written; one that is a file (or lies under a file) is refused here, once, with one line.

    A `.scribe` that is a symbolic link, or holds one where scribe keeps its files, is refused:
    a repository can commit links, and would then choose where transcripts are written and what
    config is read (a link to a folder inside the workspace would let the agent's own file
    tools rewrite the config). SCRIBE_HOME is the person's choice, links and all."""
    home = os.environ.get("SCRIBE_HOME")
    path = Path(home).expanduser().resolve() if home else workspace / ".scribe"
    existing = next((p for p in (path, *path.parents) if os.path.lexists(p)), None)
    if not home:
        for link in (path, *(path / name for name in STATE_ENTRIES)):
            if link.is_symlink():
                raise ConfigError(f"{link} is a symbolic link (to {os.readlink(link)}); scribe keeps its state "
                                  f"only in a real folder: remove the link, or set SCRIBE_HOME")
    if existing is not None and not existing.is_dir():
        raise ConfigError(f"SCRIBE_HOME {path} is not a folder" if home else
                          f"the state folder {path} is not a folder")
    return path


def own_config_path(workspace: Path) -> Path | None:
    """The state folder's config file when it is the workspace's own (inside it), else None."""
    state = state_dir(workspace)
    return state / "config.toml" if _inside(state, workspace) else None


def workspace_files(workspace: Path) -> dict[str, bytes]:
    """The workspace's own config files that exist, by their name in it: what trusting it
    applies, read once (what is applied is what was fingerprinted, not a later rewrite)."""
    own = own_config_path(workspace)
    named = {MCP_JSON: workspace / MCP_JSON}
    if own is not None:
        named[_own_name(workspace, own)] = own
    found: dict[str, bytes] = {}
    for name, path in named.items():
        if path.is_file():
            try:
                found[name] = path.read_bytes()
            except OSError as exc:
                raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    for folder in (WORKSPACE_COMMANDS, WORKSPACE_AGENTS):
        files, _ = read_command_files(workspace / folder)
        found.update({f"{folder}/{name}": data for name, data in files.items()})
    return found


def read_command_files(folder: Path) -> tuple[dict[str, bytes], list[str]]:
    """The `.md` files under `folder` by their path in it (`db/seed.md`), and one line for each
    left out: a symbolic link (never followed: a repository can commit one to any file of
    yours), a file too large, or past the number read. A missing folder has none."""
    if folder.is_symlink() or not folder.is_dir():
        return {}, ([f"commands: ignored {folder}: a symbolic link, not followed"] if folder.is_symlink() else [])
    found: dict[str, bytes] = {}
    notes: list[str] = []
    for root, dirs, files in os.walk(folder):
        base = Path(root)
        for name in sorted(dirs):
            if (base / name).is_symlink():
                notes.append(f"commands: ignored {base / name}: a symbolic link, not followed")
        dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink() and not d.startswith("."))
        for name in sorted(files):
            path = base / name
            if not name.endswith(".md"):
                continue
            if path.is_symlink():
                notes.append(f"commands: ignored {path}: a symbolic link, not followed")
                continue
            if len(found) >= COMMAND_FILES:
                notes.append(f"commands: ignored {path}: more than {COMMAND_FILES} command files")
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
                with os.fdopen(fd, "rb") as file:
                    if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                        notes.append(f"commands: ignored {path}: not a regular file")
                        continue
                    data = file.read(COMMAND_FILE_BYTES + 1)
            except OSError as exc:
                notes.append(f"commands: ignored {path}: cannot read ({exc.strerror or exc})")
                continue
            if len(data) > COMMAND_FILE_BYTES:
                notes.append(f"commands: ignored {path}: larger than {COMMAND_FILE_BYTES // 1024} KB")
                continue
            found[path.relative_to(folder).as_posix()] = data
    return found, notes


def _own_name(workspace: Path, path: Path) -> str:
    return path.resolve().relative_to(workspace.resolve()).as_posix()


def trust_of(workspace: Path, *, granted: bool = False) -> WorkspaceTrust:
    """Whether the workspace's own files apply: trusted in the person's trust file with these
    very files, or `granted` for this run (--trust-workspace)."""
    files = workspace_files(workspace)
    mark = fingerprint(files)
    if not files:
        return WorkspaceTrust(workspace, files, mark, True, "it has no config files of its own")
    if granted:
        return WorkspaceTrust(workspace, files, mark, True, "trusted for this run (--trust-workspace)",
                              for_this_run=True)
    entry = trust_store().find(workspace)
    if entry is None:
        return WorkspaceTrust(workspace, files, mark, False, "not trusted")
    if entry.fingerprint != mark:
        return WorkspaceTrust(workspace, files, mark, False, f"its files changed since you trusted it ({entry.since})")
    return WorkspaceTrust(workspace, files, mark, True, f"trusted since {entry.since} ({trust_store().path})")


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or path.is_relative_to(folder)


def config_files(workspace: Path, trust: WorkspaceTrust | None = None) -> dict[Path, bytes | None]:
    """The config files that apply, weakest first: the person's own, then the state folder's
    when it is the person's own, or the workspace's and trusted. Each with its text when it is
    the workspace's (the bytes trust fingerprinted), None for a file to read now."""
    trust = trust or trust_of(workspace)
    own = own_config_path(workspace)
    applied: dict[Path, bytes | None] = {user_config_path(): None}
    if own is None:
        applied[state_dir(workspace) / "config.toml"] = None
    elif trust.trusted and _own_name(workspace, own) in trust.files:
        applied[own] = trust.files[_own_name(workspace, own)]
    return applied


def read_config_file(path: Path, data: bytes | None = None) -> Any:
    """A config file parsed (TOML, or JSON for a `.json` file), None if there is none; a file
    that cannot be read or parsed is a ConfigError naming it. `data`: its bytes as read before."""
    if data is None and not path.is_file():
        return None
    kind = "JSON" if path.suffix == ".json" else "TOML"
    try:
        text = path.read_text(encoding="utf-8") if data is None else data.decode("utf-8")
        return json.loads(text) if kind == "JSON" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid {kind} ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None


@dataclass(frozen=True)
class ConfigFiles:
    """The config files that apply to a workspace, weakest first, each parsed once, and the
    trust they were chosen under."""

    trust: WorkspaceTrust
    parsed: tuple[tuple[Path, dict[str, Any]], ...]

    @property
    def user(self) -> tuple[Path, dict[str, Any]]:
        """The person's own file (an empty table when there is none)."""
        return self.parsed[0]

    @property
    def state(self) -> tuple[tuple[Path, dict[str, Any]], ...]:
        """The state folder's file, when it applies."""
        return self.parsed[1:]


def read_config(workspace: Path, trust: WorkspaceTrust | None = None) -> ConfigFiles:
    """The config files that apply under `trust` (as `trust_of` finds it, unless given), read."""
    trust = trust or trust_of(workspace)
    parsed: list[tuple[Path, dict[str, Any]]] = []
    for path, data in config_files(workspace, trust).items():
        found = read_config_file(path, data)
        parsed.append((path, found if isinstance(found, dict) else {}))
    return ConfigFiles(trust, tuple(parsed))
