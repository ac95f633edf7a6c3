"""Custom slash commands: markdown files whose text, with the arguments put in, is sent as the
person's message.

    ~/.config/scribe/commands/review.md        /review            the person's own
    <workspace>/.scribe/commands/review.md     /review            the workspace's, when trusted
    <workspace>/.scribe/commands/db/seed.md    /db:seed           a subfolder names a namespace

A file may open with a front matter between `---` lines: `description` (the line /help shows),
`argument-hint` (what it takes, shown in /help), and `model` (the session switches to that model,
as `/model` does, before the message is sent). Other keys (another agent's `allowed-tools`) are
ignored. In the text, `$ARGUMENTS` is everything typed after the name, `$1` to `$9` its words
(quotes group words as a shell does), and `$$` a dollar sign; arguments given to a text with no
placeholder are added after it, on a line of their own, so nothing typed is lost.

The workspace's files are read with the bytes trust fingerprinted (settings/files.py
`workspace_files`): a changed or new command file makes the workspace a stranger's again, as a
changed config file does. A name that is a built-in command's is refused, and the person's own
file wins over the workspace's of the same name, each with one line saying so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .files import WORKSPACE_COMMANDS, read_command_files, user_config_dir
from .trust import WorkspaceTrust

Owner = Literal["person", "workspace"]
_PLACEHOLDER = re.compile(r"\$(\$|ARGUMENTS\b|[1-9])")
# What a command's name may hold: what the REPL reads as one command word (no space, no slash).
_NAME = re.compile(r"[^\s/]+")


@dataclass(frozen=True)
class CustomCommand:
    name: str
    text: str  # the body, front matter removed
    owner: Owner
    source: str  # the file, as shown to the person
    description: str = ""
    argument_hint: str = ""
    model: str | None = None

    def help_line(self) -> str:
        whose = "yours" if self.owner == "person" else "this workspace's"
        return f"{self.description or first_words(self.text)} ({whose}: {self.source})"


@dataclass(frozen=True)
class CommandSet:
    commands: dict[str, CustomCommand] = field(default_factory=dict)
    # The workspace's commands left unused because it is not trusted: name -> its file.
    untrusted: dict[str, str] = field(default_factory=dict)
    # One line each for what was left out and why (a built-in's name, a clash, an unreadable file).
    notes: list[str] = field(default_factory=list)


def person_commands_dir() -> Path:
    return user_config_dir() / "commands"


def load_commands(workspace: Path, trust: WorkspaceTrust, builtins: Collection[str]) -> CommandSet:
    """The person's commands, then the workspace's as trust read them (only when trusted)."""
    commands: dict[str, CustomCommand] = {}
    notes: list[str] = []
    folder = person_commands_dir()
    files, problems = read_command_files(folder)
    notes += problems
    _add(commands, notes, files, "person", lambda rel: str(folder / rel), builtins)
    prefix = WORKSPACE_COMMANDS + "/"
    own = {name.removeprefix(prefix): data for name, data in trust.files.items() if name.startswith(prefix)}
    untrusted: dict[str, str] = {}
    if own and not trust.trusted:
        untrusted = {name: prefix + rel for rel in own if (name := command_name(rel))}
    elif own:
        _add(commands, notes, own, "workspace", lambda rel: prefix + rel, builtins)
    return CommandSet(commands, untrusted, notes)


def _add(commands: dict[str, CustomCommand], notes: list[str], files: Mapping[str, bytes], owner: Owner,
         shown: object, builtins: Collection[str]) -> None:
    for rel, data in sorted(files.items()):
        where = shown(rel)  # type: ignore[operator]
        name = command_name(rel)
        if name is None:
            notes.append(f"commands: ignored {where}: its name has a space or is empty; rename the file")
            continue
        if name in builtins:
            notes.append(f"commands: ignored {where}: /{name} is a built-in command; rename the file")
            continue
        if name in commands:
            kept = commands[name]
            notes.append(f"commands: ignored {where}: /{name} is already {kept.source}")
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            notes.append(f"commands: ignored {where}: not UTF-8 text")
            continue
        meta, body = front_matter(text)
        commands[name] = CustomCommand(name, body, owner, where, meta.get("description", ""),
                                       meta.get("argument-hint", ""), meta.get("model") or None)


def command_name(relative: str) -> str | None:
    """`review.md` -> `review`, `db/seed.md` -> `db:seed`, lower case (commands are typed in any
    case); None for a name the REPL could not read as one word."""
    parts = relative.removesuffix(".md").split("/")
    name = ":".join(parts).lower()
    return name if name and all(parts) and _NAME.fullmatch(name) else None


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """The `key: value` lines between a first line `---` and the next `---`, and the text after
    them. A value may be quoted; a file without a closing `---` has no front matter."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    meta: dict[str, str] = {}
    for index, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return meta, "".join(lines[index + 1:]).lstrip("\n")
        key, colon, value = line.partition(":")
        if colon and key.strip():
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            meta[key.strip().lower()] = value
    return {}, text


def expand(command: CustomCommand, arguments: str) -> str:
    """The message the command sends: its text with the arguments put in."""
    arguments = arguments.strip()
    try:
        words = shlex.split(arguments)
    except ValueError:  # an unclosed quote: plain words
        words = arguments.split()

    def put(match: re.Match[str]) -> str:
        what = match.group(1)
        if what == "$":
            return "$"
        if what == "ARGUMENTS":
            return arguments
        number = int(what)
        return words[number - 1] if number <= len(words) else ""

    text = command.text.rstrip("\n")
    if _PLACEHOLDER.search(text) is None or not any(m.group(1) != "$" for m in _PLACEHOLDER.finditer(text)):
        expanded = _PLACEHOLDER.sub(put, text)
        return f"{expanded}\n\n{arguments}" if arguments else expanded
    return _PLACEHOLDER.sub(put, text)


def first_words(text: str, limit: int = 60) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[:limit - 1] + "…"
