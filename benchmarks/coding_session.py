"""A scripted coding session the fake Messages API plays to any agent: scribe (its tools
`write_file`, `run_command`, `read_file`) or Claude Code (`Write`, `Bash`, `Read`), told apart by
the tools a request offers.

Each turn the person asks for one small module; the model answers in four calls: it writes the
file, runs it, reads it back, and says what the run printed and how long the file is, taken from
the tool results it was sent (so a turn whose command did not run, or whose output did not come
back, answers differently and is counted as not done). The model works from the request alone:
the turn is the last user message that opens with "Step N:", its progress the assistant
messages after it, so a retried or repeated call gets the same answer.

scribe's memory side calls (observer, reflector, curator) are answered as `SideCallModel` answers
them, through the tool they force. Every other call (a prompt that is not a step, a side call
without the agent's tools: a title, a summary, a check) gets a short text answer. Each call is
counted by agent and kind, so the benchmark can say what each agent asked besides the work.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.fakeapi import Reply, ScriptItem, SideCallModel, side_call_kind, text_block, tool_use_block

__all__ = ["CLAUDE_CODE", "SCRIBE", "CodingModel", "Dialect", "answer_for", "current_prompt", "prompt_for", "result_text"]

_STEP = re.compile(r"^Step (\d+): ")
_PRINTED = re.compile(r"square of (\d+) is (\d+)")


@dataclass(frozen=True)
class Dialect:
    """An agent's names for the three tools a turn uses, and how it names files."""

    name: str
    write: str
    run: str
    read: str
    path_key: str
    absolute: bool  # Claude Code's file tools take absolute paths; scribe's, paths in the workspace

    def path(self, workspace: Path, name: str) -> str:
        return str(workspace / name) if self.absolute else name


SCRIBE = Dialect("scribe", "write_file", "run_command", "read_file", "path", absolute=False)
CLAUDE_CODE = Dialect("claude", "Write", "Bash", "Read", "file_path", absolute=True)
DIALECTS = (SCRIBE, CLAUDE_CODE)


def file_name(n: int) -> str:
    return f"step_{n:02d}.py"


def prompt_for(n: int) -> str:
    return (f"Step {n}: write {file_name(n)} with a function square(x) and a main that prints the square "
            f"of {n}, run it, and read the file back to check it.")


def module_for(n: int) -> str:
    return ("def square(x: int) -> int:\n    return x * x\n\n\n"
            f'if __name__ == "__main__":\n    print(f"square of {n} is {{square({n})}}")\n')


def answer_for(n: int) -> str:
    """What a turn that did its work ends with: the run's output and the file's length, as the
    tool results showed them."""
    return f"Done: {file_name(n)} prints `square of {n} is {n * n}` and has {module_for(n).count(chr(10))} lines."


class CodingModel:
    """The fake server's responder for the session (thread-safe: the counters are locked)."""

    def __init__(self, workspaces: dict[str, Path]) -> None:
        self.workspaces = workspaces  # dialect name -> the folder its agent works in
        self.calls: Counter[str] = Counter()  # "scribe agent", "scribe curator", "other side", ...
        self._lock = threading.Lock()
        self._memory = SideCallModel(tools="honour")

    def count(self, label: str) -> None:
        with self._lock:
            self.calls[label] += 1

    def __call__(self, request: dict[str, Any]) -> ScriptItem:
        # A memory side call may carry the agent's tools (it is sent through the agent's cached
        # prefix), so its kind is asked first.
        memory = side_call_kind(request)
        dialect = dialect_of(request)
        if memory != "agent":
            label = f"scribe {memory}"
        else:
            label = f"{dialect.name} agent" if dialect is not None else "other side"
        self.count(label)
        if memory != "agent":
            return self._memory(request)
        if dialect is None:
            return Reply.text("Writing and running small Python modules.")
        step = _current_step(request)
        if step is None:
            return Reply.text("Hello! What shall we build?")
        n, results = step
        workspace = self.workspaces[dialect.name]
        path = dialect.path(workspace, file_name(n))
        if len(results) == 0:
            return Reply([text_block(f"I'll write {file_name(n)}."),
                          tool_use_block(dialect.write, {dialect.path_key: path, "content": module_for(n)})])
        if len(results) == 1:
            return Reply([tool_use_block(dialect.run, {"command": f"python3 {file_name(n)}"})])
        if len(results) == 2:
            return Reply([tool_use_block(dialect.read, {dialect.path_key: path})])
        printed = _PRINTED.search(results[1])
        lines = _numbered_lines(results[2])
        if printed is None or int(printed.group(1)) != n or lines != module_for(n).count("\n"):
            return Reply.text(f"Step {n} did not check out: the run said {results[1][:200]!r}.")
        return Reply.text(f"Done: {file_name(n)} prints `{printed.group(0)}` and has {lines} lines.")


def dialect_of(request: dict[str, Any]) -> Dialect | None:
    """The agent whose tools the request offers, or None for a call without them (a side call)."""
    names = {tool.get("name") for tool in request.get("tools") or [] if isinstance(tool, dict)}
    return next((d for d in DIALECTS if {d.write, d.run, d.read} <= names), None)


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "\n".join(item.get("text", "") for item in content if isinstance(item, dict))
    return str(content)


def _current_step(request: dict[str, Any]) -> tuple[int, list[str]] | None:
    """(N, the tool results since "Step N:" in order) for the step being worked on, or None when
    the last prompt is not a step."""
    found = current_prompt(request, _STEP)
    return (int(found[0].group(1)), found[1]) if found else None


def current_prompt(request: dict[str, Any], pattern: re.Pattern[str]) -> tuple[re.Match[str], list[str]] | None:
    """(the match of `pattern` on the person's last prompt, the tool results after it in order),
    or None when that prompt does not match (reminders an agent adds to a message are not a prompt)."""
    messages = request.get("messages") or []
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") != "user":
            continue
        texts = [t.strip() for t in _texts(message)]
        match = next((m for m in map(pattern.match, texts) if m), None)
        if match is None:
            if any(t and not t.startswith("<system-reminder>") for t in texts):
                return None  # a later prompt that does not match
            continue  # tool results, or reminders only
        results = [result_text(b) for later in messages[i + 1:] if later.get("role") == "user"
                   for b in later.get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_result"]
        return match, results
    return None


def _numbered_lines(read_back: str) -> int:
    """How many lines of the file a read result shows: both agents number them ("  3\\t..." or
    "3: ..."), so the lines are those that begin with a number; unnumbered text (a reminder, a
    header) is not the file. Claude Code also numbers the empty line after the final newline,
    which is no line of the file."""
    numbered = [line for line in read_back.splitlines() if re.match(r"^\s*\d+\s*[\t:|→]", line)]
    if numbered and not re.sub(r"^\s*\d+\s*[\t:|→]", "", numbered[-1]).strip():
        numbered.pop()
    return len(numbered)
