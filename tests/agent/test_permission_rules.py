"""Permission rules as written and as decided: reading `tool(pattern)` (settings/rules.py), the
order deny > mode's refusal > ask > mode's allowance > allow (agent/permissions.py), patterns
matched on resolved paths, and keeping a rule in a config file without losing what it held."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from helpers import trust_here
from scribe.agent.permissions import Call, PermissionPolicy
from scribe.settings.files import ConfigError, trust_of
from scribe.settings.rules import (
    THIS_SESSION,
    flag_rules,
    parse_rule,
    save_rule,
    save_workspace_rule,
    split_rules,
)


@pytest.fixture(autouse=True)
def own_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The person's config folder (and trust file) in the test's own folder."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("SCRIBE_HOME", raising=False)


def allow(*texts: str) -> list:
    return [parse_rule(text, "allow", "test") for text in texts]


@pytest.mark.parametrize(("text", "error"), [
    ("Bash(git status:*)", "Bash is Claude Code's name; scribe's tool is run_command"),
    ("run(ls)", "unknown tool run (scribe's: edit_file, list_files"),
    ("recall(x)", "recall takes no pattern: name it alone"),
    ("mcp__github__get_issue(x)", "an MCP tool's rule is its name alone"),
    ("web_fetch(python.org)", "web_fetch's pattern is domain:HOST"),
    ("run_command(echo 'open)", "a ' is left open"),
    ("write_file(../outside/**)", "it cannot hold a .. folder"),
    ("run_command()", "the pattern is empty"),
    ("*", "only an MCP tool's name may hold a *"),
    ("run_command(ls", "a rule is a tool's name, with a pattern in parentheses or without"),
])
def test_a_rule_that_cannot_be_read_says_why_and_where_it_came_from(text: str, error: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_rule(text, "allow", "/home/me/.config/scribe/config.toml")
    assert str(refused.value).startswith(f"/home/me/.config/scribe/config.toml: allow rule {text!r}: ")
    assert error in str(refused.value)


@pytest.mark.parametrize(("pattern", "matched", "unmatched"), [
    ("git status:*", ["git status", "git status --short"], ["git statusx", "git", "git stash"]),
    ("git status*", ["git status", "git statusx -v"], ["git stash"]),
    ("rm *", ["rm", "rm -rf x"], ["rmdir x", "xrm y"]),
    ("npm   test", ["npm test"], ["npm test --watch"]),
    ("git commit -m 'fix *'", ["git commit -m fix *"], ["git commit -m fix it"]),
    ("echo \"a b\" *", ["echo a b", "echo a b c"], ["echo a"]),
])
def test_a_command_pattern_matches_words_not_spelling(pattern: str, matched: list[str], unmatched: list[str]) -> None:
    policy = PermissionPolicy("ask", rules=allow(f"run_command({pattern})"))
    for command in matched:
        assert policy.decide("run_command", "command", {"command": command}).verdict == "allow", command
    for command in unmatched:
        assert policy.decide("run_command", "command", {"command": command}).verdict == "ask", command


def test_deny_wins_over_allow_and_ask_asks_where_the_mode_would_allow() -> None:
    rules = [*allow("run_command(git *)"), parse_rule("run_command(git push*)", "ask", "mine"),
             parse_rule("run_command(git push --force*)", "deny", "mine")]

    def verdict(mode: str, command: str) -> str:
        return PermissionPolicy(mode, rules=rules).decide("run_command", "command", {"command": command}).verdict

    assert verdict("accept-edits", "git status") == "allow"  # allow lifts the mode's question
    assert verdict("full-auto", "git push origin") == "ask"  # ask asks where the mode would allow
    assert verdict("full-auto", "git push --force") == "deny"
    assert verdict("read-only", "git status") == "deny"  # the mode's refusal is never lifted
    always = PermissionPolicy("ask", rules=rules, always={"run_command"})
    assert always.decide("run_command", "command", {"command": "git push"}).verdict == "ask"
    assert always.decide("run_command", "command", {"command": "git push --force"}).verdict == "deny"


def test_a_refusal_names_the_rule_and_what_of_the_line_it_matched() -> None:
    policy = PermissionPolicy("full-auto", rules=[parse_rule("run_command(rm *)", "deny", "/cfg/config.toml"),
                                                  parse_rule("run_command(git push*)", "ask", "--flag")])
    line = {"command": "git status; /bin/rm -rf build"}
    denied = policy.decide("run_command", "command", line)
    assert policy.refusal_of(denied, "run_command", "command", line, asked=False) == (
        "run_command was refused by the deny rule run_command(rm *) (from /cfg/config.toml): `rm -rf build` matches it")
    push = {"command": "git push"}
    asked = policy.decide("run_command", "command", push)
    assert policy.refusal_of(asked, "run_command", "command", push, asked=False) == (
        "run_command was not run: the ask rule run_command(git push*) (from --flag) asks the user first: `git push` "
        "matches it, and nobody can answer in this run")
    headless = PermissionPolicy("accept-edits")
    make = {"command": "make test"}
    assert headless.refusal_of(headless.decide("run_command", "command", make), "run_command", "command", make,
                               asked=False).endswith("or with an allow rule (--allowed-tools 'run_command(make test:*)')")


def test_file_patterns_match_the_resolved_path(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (workspace / "docs").mkdir()
    (workspace / "docs" / "out").symlink_to(outside)  # a link out of the workspace
    (workspace / "secrets").mkdir()
    (workspace / "notes").symlink_to(workspace / "secrets")  # a link into a denied folder
    policy = PermissionPolicy("ask", workspace=workspace, rules=[
        *allow("write_file(docs/**)", f"write_file({outside}/*.txt)"),
        parse_rule("write_file(secrets/**)", "deny", "test"), parse_rule("read_file(**/.env)", "deny", "test")])

    def verdict(tool: str, path: str) -> str:
        return policy.decide(tool, "edit" if tool == "write_file" else "read", {"path": path}).verdict

    assert verdict("write_file", "docs/guide/intro.md") == "allow"
    assert verdict("write_file", str(workspace / "docs" / "a.md")) == "allow"  # absolute, inside
    assert verdict("write_file", "docs/../README.md") == "ask"  # `..` climbs out of docs/
    assert verdict("write_file", "docs/out/x.md") == "ask"  # the link leads out of the workspace
    assert verdict("write_file", "docs/out/x.txt") == "allow"  # where it leads, an absolute rule allows
    assert verdict("write_file", "notes/key.pem") == "deny"  # resolved into secrets/
    assert verdict("write_file", "secrets/../secrets/x") == "deny"
    assert verdict("read_file", "app/.env") == "deny"  # deny rules hold for reads too
    assert verdict("read_file", "app/env") == "allow"


def test_web_fetch_and_mcp_rules() -> None:
    policy = PermissionPolicy("accept-edits", rules=[*allow("web_fetch(domain:python.org)", "mcp__github__get_*"),
                                                      parse_rule("mcp__github__delete_repo", "deny", "test")])

    def verdict(tool: str, kind: str, args: dict) -> str:
        return policy.decide(tool, kind, args).verdict  # type: ignore[arg-type]

    assert verdict("web_fetch", "web", {"url": "https://docs.python.org/3/"}) == "allow"
    assert verdict("web_fetch", "web", {"url": "https://python.org.evil.example/"}) == "ask"
    assert verdict("web_fetch", "web", {"url": "https://evilpython.org/"}) == "ask"
    assert verdict("mcp__github__get_issue", "mcp", {}) == "allow"
    assert verdict("mcp__github__create_issue", "mcp", {}) == "ask"
    assert verdict("mcp__github__delete_repo", "mcp", {}) == "deny"


def test_flags_hold_several_rules_separated_by_commas_or_blanks() -> None:
    assert split_rules("run_command(git status *), read_file  write_file(docs/**)") == [
        "run_command(git status *)", "read_file", "write_file(docs/**)"]
    rules = flag_rules(["run_command(git log:*),run_command(git diff:*)"], ["web_fetch run_command(rm *)"])
    assert [(r.verdict, r.text, r.source) for r in rules] == [
        ("allow", "run_command(git log:*)", "--allowed-tools"), ("allow", "run_command(git diff:*)", "--allowed-tools"),
        ("deny", "web_fetch", "--disallowed-tools"), ("deny", "run_command(rm *)", "--disallowed-tools")]


def test_the_rules_offered_at_a_question_are_the_exact_line_then_its_prefixes(workspace: Path) -> None:
    def offered(tool: str, args: dict) -> list[str]:
        return [offer.text for offer in Call(tool, args, workspace).offers()]

    assert offered("run_command", {"command": "git status --short"}) == [
        "run_command(git status --short)", "run_command(git status:*)"]
    assert offered("run_command", {"command": "git add -A && git commit -m 'fix it'"}) == [
        "run_command(git add -A), run_command(git commit -m 'fix it')",
        "run_command(git add:*), run_command(git commit:*)"]
    assert offered("run_command", {"command": "python script.py"}) == ["run_command(python script.py)"]
    assert offered("run_command", {"command": "git status > notes.txt"}) == []  # no rule could match it
    assert offered("write_file", {"path": "docs/guide/a.md"}) == ["write_file(docs/guide/a.md)",
                                                                  "write_file(docs/guide/**)"]
    assert offered("web_fetch", {"url": "https://docs.python.org/3/"}) == ["web_fetch(domain:docs.python.org)"]
    assert offered("mcp__s__t", {}) == ["mcp__s__t"]
    assert all(r.source == THIS_SESSION for o in Call("run_command", {"command": "ls"}, workspace).offers()
               for r in o.rules)


def test_a_saved_rule_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('# my settings\nmodel = "claude-opus-5"  # the big one\n\n[permissions]\n'
                      'deny = ["run_command(rm *)"]  # never\n')
    save_rule(config, parse_rule("run_command(git status:*)", "allow", "x"))
    save_rule(config, parse_rule("run_command(rm -rf /*)", "deny", "x"))
    save_rule(config, parse_rule("run_command(git status:*)", "allow", "x"))  # once is enough
    text = config.read_text()
    assert "# my settings" in text and "# the big one" in text and "# never" in text
    assert tomllib.loads(text) == {"model": "claude-opus-5", "permissions": {
        "deny": ["run_command(rm *)", "run_command(rm -rf /*)"], "allow": ["run_command(git status:*)"]}}
    fresh = tmp_path / "new" / "config.toml"
    save_rule(fresh, parse_rule("write_file(docs/**)", "allow", "x"))
    assert tomllib.loads(fresh.read_text()) == {"permissions": {"allow": ["write_file(docs/**)"]}}


def test_a_rule_saved_in_a_trusted_workspace_keeps_it_trusted(workspace: Path) -> None:
    own = workspace / ".scribe" / "config.toml"
    own.parent.mkdir(exist_ok=True)
    own.write_text("max_turns = 7\n")
    assert not trust_of(workspace).trusted
    with pytest.raises(ConfigError, match="this workspace's own config is not trusted"):
        save_workspace_rule(workspace, parse_rule("run_command(make:*)", "allow", "x"))
    assert "permissions" not in own.read_text()
    trust_here(workspace)
    assert save_workspace_rule(workspace, parse_rule("run_command(make:*)", "allow", "x")) == own
    assert tomllib.loads(own.read_text()) == {"max_turns": 7, "permissions": {"allow": ["run_command(make:*)"]}}
    assert trust_of(workspace).trusted  # the person's own change does not make it a stranger's
    own.write_text(own.read_text() + "sandbox = false\n")  # anyone else's still does
    assert not trust_of(workspace).trusted


def test_a_path_no_rule_resolves_is_never_allowed(workspace: Path) -> None:
    os.symlink("loop", workspace / "loop")
    policy = PermissionPolicy("ask", workspace=workspace, rules=allow("write_file(**)"))
    assert policy.decide("write_file", "edit", {"path": "loop/x"}).verdict == "ask"
    assert policy.decide("write_file", "edit", {"path": "a/b.txt"}).verdict == "allow"
