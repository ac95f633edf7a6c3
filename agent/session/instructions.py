"""The system instructions: fixed guidance plus the environment as it was at session start.

Built once per session and recorded in the session event; the renderer never rebuilds it, so
nothing time-relative can creep into the cached prefix.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from scribe.tools.base import ToolContext, ToolError
from scribe.tools.paths import resolve_path
from scribe.tools.secrets import Redactor

GUIDANCE = """\
You are scribe, a coding agent working in a person's repository from their terminal.

How to work:
- Read before you edit. Prefer edit_file with enough surrounding lines to match exactly once; use write_file for new files or full rewrites.
- Run commands with run_command to build, test and inspect; look at their output before claiming success.
- Keep changes small and focused on what was asked. Do not invent files, APIs or results.
- When a tool result is an error, read it and adjust; do not repeat the same call unchanged.
- Your memory of this session is its log. Older parts appear as observations in this system prompt; exact earlier details (file contents, command output, error text) can be read back with the recall tool.
- When you are done, answer briefly: what you changed, what you ran and what it showed, what remains."""


SUBAGENT_GUIDANCE = """\
You are a sub-agent of scribe, a coding agent working in a person's repository. The main agent handed you one task, and you see only its words. Do it with your tools, then answer once.
How to work:
- Your final answer is all the main agent gets back: give the result itself (the findings, file paths and line numbers, exact text, commands and what they showed), not an account of what you did.
- Read before you conclude; do not invent files, APIs or results. If you cannot finish, say what is missing and what you found so far.
- Keep to the task: do not start other work.
- Your whole work is kept in your own log, which the main agent can read back."""


def subagent_guidance(role: str) -> str:
    """A sub-agent's instructions: the shared ones, then its kind's own (its agent file's text)."""
    return SUBAGENT_GUIDANCE + (f"\n\nYour role:\n{role.strip()}" if role.strip() else "")


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


@dataclass(frozen=True)
class ProjectTexts:
    texts: list[ProjectText]
    # One line per file left out (it leads outside the workspace), for the person to see.
    refused: list[str]


class InstructionFileRefused(ValueError):
    """An instruction file that leads where read_file would not go."""


def read_project_texts(workspace: Path, notes_path: Path, redact: Redactor | None = None) -> ProjectTexts:
    """AGENTS.md and CLAUDE.md at the workspace root, then the curated notes, if present. They
    are read as read_file reads a file (a repository can commit `AGENTS.md -> ~/.ssh/id_rsa`):
    one that resolves outside the workspace (or into scribe's state) is left out and named in
    `refused`; what is read is redacted as a tool's output is, since it goes to the model and
    into the log."""
    redact = redact or Redactor.from_environ()
    found, refused = [], []
    context = ToolContext(workspace=workspace, scribe_folders=(notes_path.parent,))
    for name in PROJECT_FILES:
        path = workspace / name
        if not os.path.lexists(path):
            continue
        try:
            resolve_path(context, name)
        except ToolError:
            target = _target(path)
            where = "into scribe's own state" if Path(target).is_relative_to(workspace.resolve()) else \
                "outside the workspace"
            refused.append(f"{name} was not read into the instructions: it leads to {target}, {where} "
                           "(read_file refuses it too)")
            continue
        if path.is_file():
            found.append(ProjectText(f"Project instructions ({name})", path, redact(_read(path))))
    try:
        notes = notes_text(notes_path)
    except InstructionFileRefused as exc:
        refused.append(str(exc))
        notes = None
    if notes is not None:
        found.append(ProjectText("Project notes (curated from earlier sessions; "
                                 "read them back with `scribe notes show`)", notes_path, redact(notes)))
    return ProjectTexts([t for t in found if t.text.strip()], refused)


def notes_text(path: Path) -> str | None:
    """The project notes, None when there are none; a notes file that is a link (to anywhere)
    is refused: scribe writes it as a file of its own."""
    if path.is_symlink():
        raise InstructionFileRefused(f"{path} is a symbolic link (to {_target(path)}); the notes were not read")
    if not path.is_file():
        return None
    return _read(path)


def _target(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return "a link that does not resolve"


def _read(path: Path) -> str:
    # Never more than the cut needs: a huge file is not read whole (4 bytes a character at most).
    with path.open("rb") as handle:
        data = handle.read(MAX_FILE_CHARS * 4 + 4)
    text = data.decode("utf-8", errors="replace")
    if len(text) > MAX_FILE_CHARS:
        text = text[:MAX_FILE_CHARS] + f"\n[… cut at {MAX_FILE_CHARS} characters …]"
    return text


def system_text(env: Environment, project: list[ProjectText] | None = None, guidance: str | None = None) -> str:
    """Guidance (the main agent's, or a sub-agent's own), environment, then the project's own
    texts. Part of the cached prefix, and recorded in the session event: a file edited during the
    session takes effect in the next session."""
    parts = [guidance or GUIDANCE, f"Environment at session start:\n{env.describe()}"]
    parts += [f"{t.label}:\n{t.text.strip()}" for t in project or []]
    return "\n\n".join(parts)


def prompt_hash(system: str, tools: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256()
    digest.update(system.encode("utf-8"))
    digest.update(json.dumps(tools, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:16]
