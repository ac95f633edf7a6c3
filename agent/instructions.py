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


def system_text(env: Environment) -> str:
    return f"{GUIDANCE}\n\nEnvironment at session start:\n{env.describe()}"


def prompt_hash(system: str, tools: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256()
    digest.update(system.encode("utf-8"))
    digest.update(json.dumps(tools, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:16]
