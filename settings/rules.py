"""Permission rules: which tool calls run without asking, which always ask, and which never run,
by tool and pattern, on top of the permission mode (agent/permissions.py decides a call by them).

    [permissions]
    allow = ["run_command(git status:*)", "run_command(npm test)", "write_file(docs/**)",
             "web_fetch(domain:docs.python.org)", "mcp__github__get_issue"]
    ask = ["run_command(git push*)"]
    deny = ["run_command(rm *)", "read_file(.env)"]

A rule is a tool's name alone (every call of it; an MCP tool's name may end in `*`), or the name
and a pattern in parentheses, whose meaning depends on the tool:

- run_command: a command, matched on each command the line would run, its words joined by one
  space, quotes removed. `*` stands for anything (spaces included); a pattern ending in ` *` or
  in `:*` (Claude Code's spelling) also matches the command without arguments, `git status:*`
  matching `git status` and `git status --short` but not `git statusx`. Quote a `*` you mean
  literally.
- read_file, write_file, edit_file, list_files, search_files: a glob of paths relative to the
  workspace (`docs/**`, `src/**/*.py`, `*.md` at the top only), or absolute (`/tmp/**`, `~/notes/*`):
  `*` and `?` within one folder, `**` across folders; a folder ending in `/` means all below it.
- web_fetch: `domain:HOST`, the host and its subdomains.

They come from the `[permissions]` table of each config file that applies (the person's own, and
a trusted workspace's: settings/files.py) and from `--allowed-tools` / `--disallowed-tools`; each
remembers where it came from. A person's "always" at a question can be kept here too (`save_rule`,
`save_workspace_rule`), never without their asking.
"""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from scribe.tools.mcp.spec import PREFIX as MCP_PREFIX
from scribe.workspace.writers.atomic import WriteRefused, write_atomic

from .files import (
    ConfigError,
    ConfigFiles,
    own_config_path,
    state_dir,
    trust_of,
    trust_store,
    workspace_files,
)
from .trust import fingerprint

RuleVerdict = Literal["allow", "ask", "deny"]
# The order a call is decided in: a deny rule first, then an ask rule, then an allow rule.
VERDICTS: tuple[RuleVerdict, ...] = ("deny", "ask", "allow")
TABLE = "permissions"
# What a rule's pattern is matched on, by tool: the argument that holds it.
COMMAND_TOOLS = {"run_command": "command"}
PATH_TOOLS = {"read_file": "path", "write_file": "path", "edit_file": "path", "list_files": "path",
              "search_files": "path"}
URL_TOOLS = {"web_fetch": "url"}
# Tools a rule names without a pattern.
PLAIN_TOOLS = frozenset({"recall", "todo"})
BUILTIN_TOOLS = frozenset({*COMMAND_TOOLS, *PATH_TOOLS, *URL_TOOLS, *PLAIN_TOOLS})
# Where each rule of the command line comes from.
ALLOWED_FLAG = "--allowed-tools"
DISALLOWED_FLAG = "--disallowed-tools"
# A rule the person kept for the rest of a session at a question, in no file.
THIS_SESSION = "this session"
# Claude Code's tool names, which people bring in their rules: the error says scribe's.
_CLAUDE_NAMES = {"Bash": "run_command", "Read": "read_file", "Write": "write_file", "Edit": "edit_file",
                 "MultiEdit": "edit_file", "WebFetch": "web_fetch", "Glob": "list_files", "Grep": "search_files",
                 "LS": "list_files", "TodoWrite": "todo"}
_RULE = re.compile(r"([A-Za-z0-9_.*-]+)(?:\((.*)\))?", re.DOTALL)
_WILD = ".*"


class RuleError(ConfigError):
    """A rule that cannot be read: the message names it, and the file or flag it came from."""


@dataclass(frozen=True)
class CommandPattern:
    """A run_command rule's pattern, matched on one command's words joined by a space."""

    regex: re.Pattern[str]

    def matches(self, command: str) -> bool:
        return self.regex.fullmatch(command) is not None


@dataclass(frozen=True)
class PathPattern:
    """A file tool's pattern: a glob relative to the workspace, or absolute."""

    regex: re.Pattern[str]
    absolute: bool

    def matches(self, relative: str | None, absolute: str) -> bool:
        """`relative`: the resolved path within the workspace (None: outside it); `absolute`: the
        resolved path itself."""
        if self.absolute:
            return self.regex.fullmatch(absolute) is not None
        return relative is not None and self.regex.fullmatch(relative) is not None


@dataclass(frozen=True)
class HostPattern:
    """web_fetch's `domain:HOST`: the host and its subdomains."""

    domain: str

    def matches(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return host == self.domain or host.endswith("." + self.domain)


Pattern = CommandPattern | PathPattern | HostPattern


@dataclass(frozen=True)
class Rule:
    verdict: RuleVerdict
    tool: str  # a tool's name; an MCP tool's may end in `*`
    pattern: str | None  # as written; None: every call of the tool
    source: str  # the config file, the flag, or THIS_SESSION
    matcher: Pattern | None = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        """`run_command(git status:*)`: the rule as a config file or flag spells it."""
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"

    def describe(self) -> str:
        """`deny rule run_command(rm *) (from ~/.config/scribe/config.toml)`: named in refusals."""
        return f"{self.verdict} rule {self.text} (from {self.source})"

    def names(self, tool: str) -> bool:
        """Whether the rule is about `tool` (an MCP name pattern: any tool it matches)."""
        if "*" in self.tool:
            return fnmatch.fnmatchcase(tool, self.tool)
        return tool == self.tool


def parse_rule(text: str, verdict: RuleVerdict, source: str) -> Rule:
    """One rule as written (`run_command(git status*)`), or a RuleError saying what is wrong."""
    written = text.strip()
    found = _RULE.fullmatch(written)
    where = f"{source}: {verdict} rule {text!r}"
    if found is None:
        raise RuleError(f"{where}: a rule is a tool's name, with a pattern in parentheses or without "
                        "(run_command(git status*), write_file(docs/**), mcp__server__tool)")
    tool, pattern = found.group(1), found.group(2)
    if tool in _CLAUDE_NAMES:
        raise RuleError(f"{where}: {tool} is Claude Code's name; scribe's tool is {_CLAUDE_NAMES[tool]}")
    mcp = tool.startswith(MCP_PREFIX)
    if "*" in tool and not (mcp and tool.index("*") >= len(MCP_PREFIX)):
        raise RuleError(f"{where}: only an MCP tool's name may hold a * (mcp__server__*)")
    if not mcp and tool not in BUILTIN_TOOLS:
        raise RuleError(f"{where}: unknown tool {tool} (scribe's: {', '.join(sorted(BUILTIN_TOOLS))}, "
                        f"or an MCP tool's {MCP_PREFIX}SERVER__TOOL)")
    if pattern is not None and not pattern.strip():
        raise RuleError(f"{where}: the pattern is empty (leave out the parentheses for every call)")
    if pattern is None or pattern.strip() == "*":  # every call of the tool
        return Rule(verdict, tool, None, source)
    try:
        matcher = _matcher(tool, pattern)
    except ValueError as exc:
        raise RuleError(f"{where}: {exc}") from None
    return Rule(verdict, tool, pattern.strip(), source, matcher)


def _matcher(tool: str, pattern: str) -> Pattern:
    if tool in COMMAND_TOOLS:
        return CommandPattern(command_regex(pattern))
    if tool in PATH_TOOLS:
        return path_pattern(pattern)
    if tool in URL_TOOLS:
        return host_pattern(pattern)
    if tool.startswith(MCP_PREFIX):
        raise ValueError("an MCP tool's rule is its name alone (mcp__server__tool, or mcp__server__* for all)")
    raise ValueError(f"{tool} takes no pattern: name it alone")


def command_regex(pattern: str) -> re.Pattern[str]:
    """A command pattern as a regular expression over a command's words joined by a space:
    quotes removed as the shell removes them, runs of blanks one space, an unquoted `*` anything,
    and a trailing ` *` or `:*` also nothing at all."""
    text = pattern.strip()
    prefix = text.endswith(":*")
    if prefix:
        text = text[:-2].rstrip()
    parts: list[str] = []
    space = False
    at = 0
    while at < len(text):
        char = text[at]
        if char in " \t\n":
            space, at = bool(parts), at + 1
            continue
        if space:
            parts.append(" ")
            space = False
        if char == "*":
            parts.append(_WILD)
            at += 1
        elif char == "\\":
            if at + 1 >= len(text):
                raise ValueError("the pattern ends in a backslash")
            parts.append(re.escape(text[at + 1]))
            at += 2
        elif char in "'\"":
            end = text.find(char, at + 1)
            if end < 0:
                raise ValueError(f"a {char} is left open")
            inner = text[at + 1:end]
            if char == '"':
                inner = re.sub(r"\\([\\$`\"])", r"\1", inner)
            parts.append(re.escape(inner))
            at = end + 1
        else:
            parts.append(re.escape(char))
            at += 1
    if not parts:
        raise ValueError("the pattern is empty")
    if prefix:
        parts.append("(?: .*)?")
    elif parts[-2:] == [" ", _WILD]:
        parts[-2:] = ["(?: .*)?"]
    return re.compile("".join(parts), re.DOTALL)


def path_pattern(pattern: str) -> PathPattern:
    text = pattern.strip()
    absolute = text.startswith(("/", "~"))
    if absolute:
        text = os.path.expanduser(text)
    while text.startswith("./"):
        text = text[2:]
    if text.endswith("/"):
        text += "**"
    if ".." in text.split("/"):
        raise ValueError("a path pattern is matched on the resolved path: it cannot hold a .. folder")
    parts: list[str] = []
    at = 0
    while at < len(text):
        if text.startswith("**/", at):
            parts.append("(?:.*/)?")
            at += 3
        elif text.startswith("**", at):
            parts.append(".*")
            at += 2
        elif text[at] == "*":
            parts.append("[^/]*")
            at += 1
        elif text[at] == "?":
            parts.append("[^/]")
            at += 1
        else:
            parts.append(re.escape(text[at]))
            at += 1
    return PathPattern(re.compile("".join(parts), re.DOTALL), absolute)


def host_pattern(pattern: str) -> HostPattern:
    text = pattern.strip()
    if not text.startswith("domain:"):
        raise ValueError("web_fetch's pattern is domain:HOST (web_fetch(domain:docs.python.org))")
    domain = text.removeprefix("domain:").strip().lower().removeprefix("*.").strip(".")
    if not domain or set(domain) & set("/:*?# "):
        raise ValueError("domain: takes a host name, such as docs.python.org")
    return HostPattern(domain)


# -- where rules come from ---------------------------------------------------------------------


def read_rules(config: ConfigFiles) -> list[Rule]:
    """The rules of the config files that apply (an untrusted workspace's are not among them),
    weakest file first; a file's table as `[permissions]` with `allow`, `ask` and `deny` lists."""
    rules: list[Rule] = []
    for path, data in config.parsed:
        rules += rules_in(data.get(TABLE), str(path))
    return rules


def rules_in(table: Any, source: str) -> list[Rule]:
    if table is None:
        return []
    if not isinstance(table, dict):
        raise RuleError(f"{source}: {TABLE} must be a table with allow, ask and deny lists")
    unknown = sorted(set(table) - set(VERDICTS))
    if unknown:
        raise RuleError(f"{source}: {TABLE}: unknown key {', '.join(unknown)} (known: allow, ask, deny)")
    rules = []
    for verdict in VERDICTS:
        listed = table.get(verdict, [])
        if not isinstance(listed, list) or not all(isinstance(r, str) for r in listed):
            raise RuleError(f"{source}: {TABLE}.{verdict} must be a list of rules (strings)")
        rules += [parse_rule(text, verdict, source) for text in listed]
    return rules


def flag_rules(allowed: Iterable[str] = (), disallowed: Iterable[str] = ()) -> list[Rule]:
    """The rules of `--allowed-tools` and `--disallowed-tools`, each given once or more, each
    holding rules separated by commas or blanks (outside parentheses)."""
    return ([parse_rule(text, "allow", ALLOWED_FLAG) for value in allowed for text in split_rules(value)]
            + [parse_rule(text, "deny", DISALLOWED_FLAG) for value in disallowed for text in split_rules(value)])


def split_rules(value: str) -> list[str]:
    """`run_command(git status*), read_file write_file(docs/**)` -> its three rules: commas and
    blanks separate rules, except inside a rule's parentheses."""
    rules: list[str] = []
    current: list[str] = []
    depth = 0
    for char in value:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
        if depth == 0 and (char == "," or char.isspace()):
            if current:
                rules.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        rules.append("".join(current))
    return rules


def describe_rules(rules: Sequence[Rule]) -> list[str]:
    """One line per rule, in the order they are decided in, for `scribe config`."""
    ordered = sorted(rules, key=lambda rule: VERDICTS.index(rule.verdict))
    width = max((len(rule.text) for rule in ordered), default=0)
    return [f"{rule.verdict:<5}  {rule.text:<{width}}  {rule.source}" for rule in ordered]


# -- keeping a rule the person chose at a question ---------------------------------------------


def save_rule(path: Path, rule: Rule) -> None:
    """Add `rule` to the `[permissions]` table of the config file at `path` (made if missing),
    keeping the rest of the file as it was, comments included."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        document = tomlkit.parse(before)
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(f"{path}: cannot add the rule to it ({exc})") from None
    table = document.get(TABLE)
    if table is None:
        table = tomlkit.table()
        document[TABLE] = table
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {TABLE} is not a table; add the rule by hand")
    listed = table.get(rule.verdict)
    if listed is None:
        listed = tomlkit.array()
        table[rule.verdict] = listed
    if not isinstance(listed, list):
        raise ConfigError(f"{path}: {TABLE}.{rule.verdict} is not a list; add the rule by hand")
    if rule.text not in listed:
        listed.append(rule.text)
    text = tomlkit.dumps(document)
    rules_in(tomllib.loads(text).get(TABLE), str(path))  # what is written reads back
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode("utf-8"), str(path))
    except (OSError, WriteRefused) as exc:
        raise ConfigError(f"{path}: cannot write the rule ({exc})") from None


def workspace_rule_path(workspace: Path) -> Path:
    """The workspace's config file, where a rule for this workspace alone is kept."""
    return state_dir(workspace) / "config.toml"


def save_workspace_rule(workspace: Path, rule: Rule) -> Path:
    """Add `rule` to the workspace's own config file, and keep the workspace trusted: what
    changed there is the person's own doing. Refused while the workspace is not trusted (its
    rules would be ignored)."""
    target = workspace_rule_path(workspace)
    own = own_config_path(workspace)
    if own is None:  # SCRIBE_HOME moved the state folder out: the file is the person's own
        save_rule(target, rule)
        return target
    trust = trust_of(workspace)
    if not trust.trusted:
        raise ConfigError(f"this workspace's own config is not trusted ({trust.reason}), so a rule kept there "
                          "would be ignored; `scribe trust` first, or keep it in your own config")
    name = own.resolve().relative_to(workspace.resolve()).as_posix()
    save_rule(target, rule)
    if trust.for_this_run:
        return target
    expected = {**trust.files, name: target.read_bytes()}
    now = workspace_files(workspace)
    if now == expected:  # only the rule changed: trusted as it is now, its servers as they were
        entry = trust_store().find(workspace)
        trust_store().grant(workspace, fingerprint(now), entry.servers if entry is not None else {})
    return target
