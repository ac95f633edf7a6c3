"""The system instructions: fixed guidance plus the environment as it was at session start.

Built once per session and recorded in the session event; the renderer never rebuilds it, so
nothing time-relative can creep into the cached prefix.
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

GUIDANCE = """\
You are scribe, a coding agent working in a person's repository from their terminal.

How to work:
- Read before you edit. Prefer edit_file with enough surrounding lines to match exactly once; use write_file for new files or full rewrites.
- Run commands with run_command to build, test and inspect; look at their output before claiming success.
- Keep changes small and focused on what was asked. Do not invent files, APIs or results.
- When a tool result is an error, read it and adjust; do not repeat the same call unchanged.
- Your memory of this session is its log. Older parts appear as observations in this system prompt; exact earlier details (file contents, command output, error text) can be read back with the recall tool.
- When you are done, answer briefly: what you changed, what you ran and what it showed, what remains."""


@dataclass(frozen=True)
class Environment:
    cwd: str
    git_branch: str | None
    git_head: str | None
    started: date

    def describe(self) -> str:
        lines = [f"- Working directory: {self.cwd}", f"- Platform: {platform.system()} {platform.machine()}"]
        if self.git_head:
            lines.append(f"- Git: branch {self.git_branch or '(detached)'} at {self.git_head[:12]} when the session began")
        else:
            lines.append("- Git: not a repository")
        lines.append(f"- Session began on {self.started.isoformat()}")
        return "\n".join(lines)


# Instruction files a project keeps at its root, read in this order.
PROJECT_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_FILE_CHARS = 40_000


@dataclass(frozen=True)
class ProjectText:
    """A file read into the instructions: where it came from, and its text as read then."""

    label: str
    path: Path
    text: str

    def source(self) -> dict[str, str]:
        return {"path": str(self.path), "sha256": hashlib.sha256(self.text.encode("utf-8")).hexdigest()}


def read_project_texts(workspace: Path, notes_path: Path) -> list[ProjectText]:
    """AGENTS.md and CLAUDE.md at the workspace root, then the curated notes, if present."""
    found = []
    for name in PROJECT_FILES:
        path = workspace / name
        if path.is_file():
            found.append(ProjectText(f"Project instructions ({name})", path, _read(path)))
    if notes_path.is_file():
        found.append(ProjectText("Project notes (curated from earlier sessions; "
                                 "read them back with `scribe notes show`)", notes_path, _read(notes_path)))
    return [t for t in found if t.text.strip()]


def _read(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if len(text) > MAX_FILE_CHARS:
        text = text[:MAX_FILE_CHARS] + f"\n[… cut at {MAX_FILE_CHARS} characters …]"
    return text


def system_text(env: Environment, project: list[ProjectText] | None = None) -> str:
    """Guidance, environment, then the project's own texts. Part of the cached prefix, and recorded
    in the session event: a file edited during the session takes effect in the next session."""
    parts = [GUIDANCE, f"Environment at session start:\n{env.describe()}"]
    parts += [f"{t.label}:\n{t.text.strip()}" for t in project or []]
    return "\n\n".join(parts)


def prompt_hash(system: str, tools: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256()
    digest.update(system.encode("utf-8"))
    digest.update(json.dumps(tools, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:16]
