"""Workspace trust: which workspaces' own config files the person has said scribe may apply.

A workspace's `.scribe/config.toml` and `.mcp.json` are a stranger's until then: a cloned
repository can commit them, and they can lift every protection scribe has (full-auto, no
sandbox, `allowed_paths = ["/"]`) or start any program as an MCP server. The person's answer is
kept outside every workspace, in `<user config>/scribe/trusted.toml`, keyed by the workspace's
real path, with a fingerprint (sha256) of the files as they were when trusted: a file changed
since (by a `git pull`, or by a command or the agent's own write_file, which may write
`.mcp.json`) is a stranger's again until the person looks at it again.

Beside each workspace it keeps what its MCP servers run (`[[workspace.server]]`: each file by
its sha256, tools/mcp/pins.py): a server the workspace defines that runs outside the sandbox
starts only while those files are unchanged, and a change asks again for that server alone.

This module knows nothing of settings: settings/values.py says which files are the workspace's
and applies them when `WorkspaceTrust.trusted`.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from scribe.log.private import make_private_folder, write_private

TRUST_FILE = "trusted.toml"
# Claude Code's MCP server file, at the workspace root (settings/mcp_servers.py reads it).
MCP_JSON = ".mcp.json"
_HEADER = ("# Workspaces whose own .scribe/config.toml and .mcp.json scribe applies, written by\n"
           "# `scribe trust` and by a yes in the REPL. `scribe trust --revoke` (or deleting an entry)\n"
           "# takes it back. A file changed since its fingerprint was taken is asked about again,\n"
           "# and so is a server whose files (workspace.server) changed since they were confirmed.\n")


class TrustFileError(ValueError):
    """The trust file cannot be read, parsed or written."""


@dataclass(frozen=True)
class TrustEntry:
    path: str
    fingerprint: str
    since: str
    # What each of its MCP servers runs, as confirmed: server name -> {file: hash}.
    servers: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkspaceTrust:
    """Whether this workspace's own files apply in this process, and why."""

    workspace: Path
    # The workspace's own config files that exist (a path relative to it -> its bytes).
    files: Mapping[str, bytes]
    fingerprint: str
    trusted: bool
    # How it came to be trusted, or why not: shown by `scribe config`.
    reason: str
    # Trusted for this run only (--trust-workspace): its servers' files as they are now, too.
    for_this_run: bool = False

    @property
    def ignored(self) -> bool:
        """There are files of the workspace's own, and they do not apply."""
        return bool(self.files) and not self.trusted


def fingerprint(files: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        data = files[name]
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return "sha256:" + digest.hexdigest()


class TrustStore:
    """The person's trust file: read whole, written whole (atomically, private to them)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self) -> list[TrustEntry]:
        try:
            data = tomllib.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise TrustFileError(f"{self.path}: cannot read the trust file ({exc})") from None
        rows = data.get("workspace", [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise TrustFileError(f"{self.path}: expected [[workspace]] tables")
        found = []
        for row in rows:
            path, mark, since = row.get("path"), row.get("fingerprint", ""), row.get("trusted", "")
            if not isinstance(path, str) or not isinstance(mark, str) or not isinstance(since, str):
                raise TrustFileError(f"{self.path}: a [[workspace]] needs path, fingerprint and trusted as strings")
            found.append(TrustEntry(path, mark, since, self._servers(row.get("server", []))))
        return found

    def _servers(self, rows: object) -> dict[str, dict[str, str]]:
        if not isinstance(rows, list):
            raise TrustFileError(f"{self.path}: workspace.server must be [[workspace.server]] tables")
        servers: dict[str, dict[str, str]] = {}
        for row in rows:
            name, files = row.get("name") if isinstance(row, dict) else None, row.get("files") if isinstance(row, dict) else None
            if not isinstance(name, str) or not isinstance(files, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
                raise TrustFileError(f"{self.path}: a [[workspace.server]] needs a name and a table of files")
            servers[name] = dict(files)
        return servers

    def find(self, workspace: Path) -> TrustEntry | None:
        key = str(workspace.resolve())
        return next((e for e in self.entries() if e.path == key), None)

    def grant(self, workspace: Path, mark: str, servers: Mapping[str, Mapping[str, str]] | None = None) -> TrustEntry:
        """Trust the workspace's files as `mark` fingerprints them, and what its servers run."""
        key = str(workspace.resolve())
        entry = TrustEntry(key, mark, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), dict(servers or {}))
        self._write([*(e for e in self.entries() if e.path != key), entry])
        return entry

    def confirm(self, workspace: Path, server: str, files: Mapping[str, str]) -> None:
        """Record what one server of a trusted workspace runs now, the rest left as it was."""
        key = str(workspace.resolve())
        entries = self.entries()
        found = next((e for e in entries if e.path == key), None)
        if found is None:
            raise TrustFileError(f"{workspace} is not trusted; `scribe trust` trusts it and its servers")
        changed = TrustEntry(found.path, found.fingerprint, found.since, {**found.servers, server: dict(files)})
        self._write([changed if e is found else e for e in entries])

    def revoke(self, workspace: Path) -> bool:
        key = str(workspace.resolve())
        before = self.entries()
        kept = [e for e in before if e.path != key]
        if len(kept) != len(before):
            self._write(kept)
        return len(kept) != len(before)

    def _write(self, entries: list[TrustEntry]) -> None:
        blocks = [_HEADER]
        for e in entries:
            blocks.append(f"\n[[workspace]]\npath = {_string(e.path)}\nfingerprint = {_string(e.fingerprint)}\n"
                          f"trusted = {_string(e.since)}\n")
            for name, files in sorted(e.servers.items()):
                pairs = ", ".join(f"{_string(k)} = {_string(v)}" for k, v in sorted(files.items()))
                blocks.append(f"[[workspace.server]]\nname = {_string(name)}\nfiles = {{ {pairs} }}\n")
        text = "".join(blocks)
        try:
            make_private_folder(self.path.parent)
            write_private(self.path, text)
        except OSError as exc:
            raise TrustFileError(f"{self.path}: cannot write the trust file ({exc.strerror or exc})") from None


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's (a path that is not UTF-8 cannot be kept)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise TrustFileError(f"{text!r} is not valid UTF-8; a workspace there cannot be trusted") from None
    return json.dumps(text, ensure_ascii=False)
