"""Which tool calls run without asking: the permission rules (settings/rules.py), then the mode.

    a deny rule matches            -> refused, naming the rule
    the mode refuses (read-only)   -> refused, naming the mode
    an ask rule matches            -> asked (headless: refused, naming the rule); so is a line too
                                      long or too deep to read to its end, where a deny or ask
                                      rule on commands could not be checked
    the mode allows                -> runs (so does a tool the person allowed for the session)
    allow rules match all of it    -> runs
    otherwise                      -> asked (headless: refused, naming the flag that allows it)

An allow rule lifts the mode's question, never its refusal: read-only stays read-only. A command
line is matched on every command it would run (agent/command_line.py): a deny or ask rule that
matches any of them, in any spelling (`/bin/rm`, `sudo rm`), decides the line; allow rules must
match each of them, and a line that cannot be read with certainty is never allowed by a rule. A
file tool's path is matched resolved (links followed, `..` taken out), so `../` or a link out of
the workspace never matches `docs/**`; deny and ask rules are matched on the path as written too.
What runs still runs in the sandbox: a rule decides whether to ask, nothing more.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from scribe.agent.command_line import CommandLine, quoted, split_line
from scribe.agent.protocol import Offer, Question
from scribe.settings.rules import (
    ALLOWED_FLAG,
    COMMAND_TOOLS,
    PATH_TOOLS,
    THIS_SESSION,
    URL_TOOLS,
    CommandPattern,
    HostPattern,
    PathPattern,
    Rule,
    parse_rule,
)
from scribe.settings.values import PermissionMode
from scribe.tools.base import ToolKind
from scribe.tools.mcp.spec import PREFIX as MCP_PREFIX

Verdict = Literal["allow", "ask", "deny"]

# An MCP tool acts wherever its server reaches, so it asks like a command; one its server marks
# read-only (a hint scribe cannot check) runs where reads do, except in `ask`, which asks for
# every MCP call.
# A web fetch reaches out of the machine (and may carry what the session read, in its URL), so it
# asks as a command does: refused in read-only, asked in `ask` and `accept-edits` (which accepts
# file edits, nothing more, as in Claude Code). One of a domain on the person's allow-list
# (`web_fetch_domains`, "web-listed") runs without asking, except in read-only.
# Plan mode reads and researches (a listed domain's pages too) and changes nothing until the
# person accepts the plan. A task call is allowed in every mode: the sub-agent runs under a mode
# never wider than its parent's, which decides each of its own calls (agent/task.py).
_TABLE: dict[str, dict[ToolKind, Verdict]] = {
    "read-only": {"read": "allow", "edit": "deny", "command": "deny", "mcp": "deny", "mcp-read": "allow",
                  "web": "deny", "web-listed": "deny", "task": "allow"},
    "plan": {"read": "allow", "edit": "deny", "command": "deny", "mcp": "deny", "mcp-read": "allow",
             "web": "deny", "web-listed": "allow", "task": "allow"},
    "ask": {"read": "allow", "edit": "ask", "command": "ask", "mcp": "ask", "mcp-read": "ask",
            "web": "ask", "web-listed": "allow", "task": "allow"},
    "accept-edits": {"read": "allow", "edit": "allow", "command": "ask", "mcp": "ask", "mcp-read": "allow",
                     "web": "ask", "web-listed": "allow", "task": "allow"},
    "full-auto": {"read": "allow", "edit": "allow", "command": "allow", "mcp": "allow", "mcp-read": "allow",
                  "web": "allow", "web-listed": "allow", "task": "allow"},
}
# How wide each mode is, narrowest first: a sub-agent's mode is never wider than its parent's.
WIDTH = ("read-only", "plan", "ask", "accept-edits", "full-auto")
# The least permissive mode that runs each kind without asking: named in refusals.
_NEEDS = {"edit": "accept-edits", "command": "full-auto", "mcp": "full-auto", "mcp-read": "accept-edits",
          "web": "full-auto", "web-listed": "accept-edits"}
# Programs whose next words name what they do (`git status`, `npm run test`, `python -m pytest`):
# the prefix rule a question offers keeps those words; of any other program, only its name
# (`touch:*`), since its next word is an argument (`touch notes.txt`).
_SUBCOMMANDS = frozenset({"git", "npm", "pnpm", "yarn", "bun", "npx", "deno", "cargo", "go", "docker", "podman",
                          "kubectl", "helm", "pip", "pip3", "uv", "poetry", "make", "gh", "brew", "apt", "apt-get",
                          "systemctl", "terraform", "dotnet", "mvn", "gradle", "bundle", "rails", "rake", "conda",
                          "mix", "composer", "nix", "python", "python3"})
_SUBCOMMAND = re.compile(r"-m|[a-z][a-z0-9_.:-]*")
# Programs that run whatever they are given: `python:*` would allow any program, so none is offered
# (but `python -m pytest:*` is).
_INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "perl", "php", "bash", "sh", "zsh", "dash", "deno",
                           "bun", "npx", "env", "sudo", "xargs", "eval", "exec"})
_PREFIX_WORDS = 2


@dataclass(frozen=True)
class Ruling:
    """What the rules and the mode say of one call."""

    verdict: Verdict
    # The rules that decided it (a line's commands may each need an allow rule); none: the mode.
    rules: tuple[Rule, ...] = ()
    # For a deny or ask rule: what of the call it matched (a command of the line, a path).
    matched: str | None = None
    # Why it asks when no rule matched but one could not be checked (a line read only in part).
    why: str | None = None

    @property
    def rule(self) -> Rule | None:
        return self.rules[0] if self.rules else None

    def recorded(self) -> list[dict[str, str]]:
        """The rules, for the call's result in the log (`rules`)."""
        return [{"verdict": r.verdict, "rule": r.text, "source": r.source} for r in self.rules]


@dataclass
class PermissionPolicy:
    mode: PermissionMode
    # Tools the person approved "always" for the rest of this session (REPL).
    always: set[str] = field(default_factory=set)
    # Tools the config lets run without asking (an MCP server's `allow` list). Unlike "always",
    # they never override a refusal: read-only mode stays read-only.
    allowed: frozenset[str] = frozenset()
    # How the person changes the mode, named in refusals: the flag, or the REPL's /mode.
    how_to_allow: str = "--permission-mode"
    # The configured rules (config files, flags): the opening's own list, so a rule the person
    # saves holds in its later sessions too. Then the rules kept for this session alone.
    rules: list[Rule] = field(default_factory=list)
    session_rules: list[Rule] = field(default_factory=list)
    # Where a file tool's relative path is resolved.
    workspace: Path | None = None

    def verdict(self, tool: str, kind: ToolKind) -> Verdict:
        """What the mode says of a tool (and "always", and an MCP server's `allow` list)."""
        if tool in self.always:
            return "allow"
        verdict = _TABLE[self.mode][kind]
        return "allow" if verdict == "ask" and tool in self.allowed else verdict

    def decide(self, tool: str, kind: ToolKind, args: dict[str, Any]) -> Ruling:
        """The rules, then the mode (see the module docstring)."""
        call = Call(tool, args, self.workspace)
        rules = [rule for rule in (*self.rules, *self.session_rules) if rule.names(tool)]
        for rule in rules:
            if rule.verdict == "deny" and (matched := call.hit(rule)) is not None:
                return Ruling("deny", (rule,), matched)
        mode = self.verdict(tool, kind)
        if mode == "deny":
            return Ruling("deny")
        for rule in rules:
            if rule.verdict == "ask" and (matched := call.hit(rule)) is not None:
                return Ruling("ask", (rule,), matched)
        unchecked = call.unchecked([rule for rule in rules if rule.verdict in ("deny", "ask")])
        if unchecked is not None:
            return Ruling("ask", (unchecked,), why=f"the line is too long or nested too deeply to be read to its end, "
                                                     f"so the {unchecked.describe()} could not be checked against all of it")
        if mode == "allow":
            return Ruling("allow")
        allowing = call.allowed_by([rule for rule in rules if rule.verdict == "allow"])
        return Ruling("allow", allowing) if allowing else Ruling("ask")

    def question(self, decision: Ruling, tool: str, args: dict[str, Any]) -> Question:
        """What the person is asked about a call `decision` asks about."""
        if decision.rule is not None:
            return Question(rule=decision.rule, why=decision.why)
        call = Call(tool, args, self.workspace)
        return Question(offers=call.offers(), unmatchable=call.unmatchable())

    def keep(self, offer: Offer) -> None:
        """Rules the person chose at a question: saved ones hold for the opening's later sessions."""
        for rule in offer.rules:
            (self.session_rules if rule.source == THIS_SESSION else self.rules).append(rule)

    def refusal_of(self, decision: Ruling, tool: str, kind: ToolKind, args: dict[str, Any], *,
                   asked: bool) -> str:
        """Why a call `decision` did not allow was not run, for the model to read."""
        rule = decision.rule
        if decision.why is not None and not asked:
            return f"{tool} was not run: {decision.why}, and nobody can answer in this run"
        if asked or rule is None:
            line = self.refusal(tool, kind, asked=asked)
            if not asked and decision.verdict == "ask" and self.how_to_allow.startswith("--"):
                line += _rule_hint(Call(tool, args, self.workspace))
            return line
        matched = f": `{decision.matched}` matches it" if decision.matched and rule.pattern is not None else ""
        if decision.verdict == "deny":
            return f"{tool} was refused by the {rule.describe()}{matched}"
        return (f"{tool} was not run: the {rule.describe()} asks the user first{matched}, "
                "and nobody can answer in this run")

    def refusal(self, tool: str, kind: ToolKind, *, asked: bool) -> str:
        needed = _NEEDS.get(kind, "full-auto")
        if asked:
            return f"{tool} was declined by the user"
        if self.mode == "plan":
            return (f"{tool} is not available while planning: plan mode reads and researches, and changes "
                    "nothing until the user accepts the plan; finish by presenting the plan")
        if kind == "mcp" and self.mode == "read-only":
            return (f"{tool} is not allowed in permission mode 'read-only' (its MCP server does not mark it "
                    f"read-only); the user can allow it with {self.how_to_allow} {needed}")
        if kind == "mcp":
            return (f"{tool} is not allowed in permission mode '{self.mode}'; the user can allow it with "
                    f"{self.how_to_allow} {needed}, or list it in the MCP server's `allow` setting")
        if kind == "web" and self.mode != "read-only":
            return (f"{tool} is not allowed in permission mode '{self.mode}'; the user can allow it with "
                    f"{self.how_to_allow} {needed}, or list the domain in the web_fetch_domains setting")
        return (f"{tool} is not allowed in permission mode '{self.mode}'; "
                f"the user can allow it with {self.how_to_allow} {needed}")


def _rule_hint(call: Call) -> str:
    """For a headless refusal: the allow rule that would let this command run."""
    offers = call.offers() if call.tool in COMMAND_TOOLS else ()
    if not offers:
        return ""
    return f", or with an allow rule ({ALLOWED_FLAG} {shlex.quote(offers[-1].text)})"


class Call:
    """One call as the rules see it: the command line it would run, the path it names resolved,
    or the host it fetches from, worked out once when first needed."""

    def __init__(self, tool: str, args: dict[str, Any], workspace: Path | None) -> None:
        self.tool, self.args, self.workspace = tool, args, workspace

    @cached_property
    def line(self) -> CommandLine:
        return split_line(str(self.args.get(COMMAND_TOOLS.get(self.tool, "command"), "")))

    @cached_property
    def paths(self) -> tuple[tuple[str | None, str], tuple[str | None, str]] | None:
        """(relative, absolute) as resolved, then as written with `..` taken out; None: no path."""
        name = PATH_TOOLS.get(self.tool)
        if name is None or self.workspace is None:
            return None
        written = str(self.args.get(name) or ".")
        root = self.workspace.resolve()
        raw = Path(os.path.expanduser(written))
        candidate = raw if raw.is_absolute() else root / raw
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL: nothing is allowed
            resolved = None
        lexical = Path(os.path.normpath(candidate))

        def both(path: Path) -> tuple[str | None, str]:
            inside = path == root or path.is_relative_to(root)
            return (path.relative_to(root).as_posix() if inside else None), path.as_posix()

        return (both(resolved) if resolved is not None else (None, "")), both(lexical)

    @cached_property
    def host(self) -> str | None:
        name = URL_TOOLS.get(self.tool)
        if name is None:
            return None
        try:
            return (urlsplit(str(self.args.get(name, ""))).hostname or "").lower() or None
        except ValueError:
            return None

    def hit(self, rule: Rule) -> str | None:
        """What of this call a deny or ask rule matches (in any spelling), None: nothing."""
        matcher = rule.matcher
        if matcher is None:
            return self.tool
        if isinstance(matcher, CommandPattern):
            return next((text for text in self.line.spellings() if matcher.matches(text)), None)
        if isinstance(matcher, PathPattern):
            if self.paths is None:
                return None
            return next((absolute for relative, absolute in self.paths if absolute and
                         matcher.matches(relative, absolute)), None)
        if isinstance(matcher, HostPattern):
            return self.host if self.host is not None and matcher.matches(self.host) else None
        return None

    def allowed_by(self, rules: list[Rule]) -> tuple[Rule, ...]:
        """The allow rules that together let this whole call run; empty: they do not."""
        whole = next((rule for rule in rules if rule.matcher is None), None)
        if whole is not None:
            return (whole,)
        if self.tool in COMMAND_TOOLS:
            line = self.line
            if not line.certain or not line.commands:
                return ()
            used: list[Rule] = []
            for command in line.commands:
                rule = next((r for r in rules if isinstance(r.matcher, CommandPattern)
                             and r.matcher.matches(command.text)), None)
                if rule is None:
                    return ()
                used.append(rule)
            return tuple(dict.fromkeys(used))
        if self.tool in PATH_TOOLS:
            resolved = self.paths[0] if self.paths is not None else None
            if resolved is None or not resolved[1]:
                return ()
            return tuple(r for r in rules if isinstance(r.matcher, PathPattern)
                         and r.matcher.matches(*resolved))[:1]
        if self.tool in URL_TOOLS and self.host is not None:
            host = self.host
            return tuple(r for r in rules if isinstance(r.matcher, HostPattern) and r.matcher.matches(host))[:1]
        return ()

    def unchecked(self, rules: list[Rule]) -> Rule | None:
        """A deny or ask rule on commands that this line was not read far enough to check."""
        if self.tool not in COMMAND_TOOLS or not self.line.partial:
            return None
        return next((rule for rule in rules if isinstance(rule.matcher, CommandPattern)), None)

    def unmatchable(self) -> str | None:
        """Why no allow rule could let this call run, if so."""
        if self.tool in COMMAND_TOOLS and not self.line.certain:
            return "; ".join(self.line.unsure)
        return None

    def offers(self) -> tuple[Offer, ...]:
        """Allow rules that would let this very call run: the exact one, then a broader one
        (a command's prefix, a file's folder); none where no rule could."""
        found: list[tuple[str, ...]] = []
        if self.tool in COMMAND_TOOLS:
            line = self.line
            if line.certain and line.commands:
                exact = tuple(dict.fromkeys(quoted(c) for c in line.commands))
                prefix = tuple(dict.fromkeys(_prefix(c.words, c.assignments) or quoted(c) for c in line.commands))
                found += [exact, prefix]
        elif self.tool in PATH_TOOLS:
            resolved = self.paths[0] if self.paths is not None else None
            if resolved is not None and resolved[1] and not set(resolved[1]) & set("*?"):
                relative, absolute = resolved
                name = relative if relative is not None else absolute
                found.append((name,))
                folder = name.rpartition("/")[0]
                if folder and folder != ".":
                    found.append((f"{folder}/**",))
        elif self.tool in URL_TOOLS and self.host is not None:
            found.append((f"domain:{self.host}",))
        elif self.tool.startswith(MCP_PREFIX):
            return (Offer((Rule("allow", self.tool, None, THIS_SESSION),)),)
        offers: list[Offer] = []
        for patterns in dict.fromkeys(found):
            try:
                offers.append(Offer(tuple(parse_rule(f"{self.tool}({p})", "allow", THIS_SESSION) for p in patterns)))
            except ValueError:  # a path no pattern can spell exactly: not offered
                continue
        return tuple(offers)


def _prefix(words: tuple[str, ...], assignments: int) -> str | None:
    """`git status:*` for `git status --short`: the program and the words after it that name
    what it does. None where it would say nothing more than the exact rule."""
    if assignments or not words:
        return None
    kept = [words[0]]
    program = os.path.basename(words[0])
    python = program.startswith("python")
    for word in words[1:1 + _PREFIX_WORDS] if program in _SUBCOMMANDS else ():
        if not _SUBCOMMAND.fullmatch(word) or (word == "-m") != (python and len(kept) == 1) or "." in word:
            break
        kept.append(word)
    if program in _INTERPRETERS and not (python and len(kept) == 3):
        return None
    return " ".join(shlex.quote(word) for word in kept) + ":*"
