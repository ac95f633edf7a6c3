"""Shared pieces for end-to-end tests: running the real `scribe` executable against the fake API."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest

from scribe.agent.config import AgentConfig, SessionChoice
from scribe.agent.driver import drive
from scribe.agent.loop import TurnLoop
from scribe.agent.opening import Opened, assemble
from scribe.agent.session.session import Session
from scribe.fakeapi import FakeMessagesServer
from scribe.log.events import Event
from scribe.log.jsonl import read_log
from scribe.settings.values import Settings
from scribe.tools.mcp.hub import McpHub

SCRIBE = str(Path(sys.executable).parent / "scribe")


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def scribe_env(base_url: str, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a person with a key, pointed at the fake API, with no stray config."""
    # COLUMNS and LINES too: a test runner may set them (pytest-xdist's workers do), and output
    # written to a pipe must not depend on the terminal the tests were started from.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SCRIBE_", "ANTHROPIC_")) and k not in ("COLUMNS", "LINES")}
    env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-test-secret-key", HOME=str(home),
               XDG_CONFIG_HOME=str(home / ".config"), NO_COLOR="1",
               # Curating notes adds a model call at the end of each run; tests that script
               # exact calls leave it off, and the notes tests turn it on.
               SCRIBE_CURATE_NOTES="false",
               # What a run leaves (a compression, a curation) is done before it exits: a test
               # reads the logs as they are once the command returns. Detached finishers are
               # tested on their own (tests/agent/test_finishing.py).
               SCRIBE_HOUSEKEEPING="inline")
    env.update(extra)
    return env


# An address no server answers: for commands that make no model call.
NO_API = "http://127.0.0.1:9"


def trust(workspace: Path, home: Path) -> None:
    """The person trusts `workspace` as its files are now, through the real `scribe trust` (the
    trust lands in `home`'s config folder, where scribe_env points scribe)."""
    ran = run_scribe(["trust"], workspace, scribe_env(NO_API, home))
    assert ran.code == 0 and ran.out.startswith("trusted: "), (ran.out, ran.err)


def trust_here(workspace: Path) -> None:
    """`trust` for a test that loads settings in this process: the same grant `scribe trust`
    makes, in the trust file this process's environment names."""
    from scribe.settings.files import trust_of, trust_store

    trust_store().grant(workspace, trust_of(workspace).fingerprint)
def as_a_person(monkeypatch: pytest.MonkeyPatch, workspace: Path, home: Path, *, curate_notes: bool = False) -> None:
    """This process as a person in `workspace` with a key and no stray config (the fake API's URL
    is set per test), for front ends driven in-process."""
    for name in list(os.environ):
        if name.startswith(("SCRIBE_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    # Most tests script every model call; notes curation (its own call) is tested on its own.
    monkeypatch.setenv("SCRIBE_CURATE_NOTES", "true" if curate_notes else "false")
    monkeypatch.setenv("SCRIBE_HOUSEKEEPING", "inline")  # see scribe_env
    monkeypatch.chdir(workspace)


# SCRIBE_TESTS_PROCESS=1 runs every `run_scribe` as a real process, as the suite once did: a
# check that what passes in process passes as the executable too.
EVERY_CALL_A_PROCESS = os.environ.get("SCRIBE_TESTS_PROCESS") == "1"


def run_scribe(args: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None,
               timeout: float = 60, *, process: bool = False) -> Ran:
    """`scribe ARGS` in `cwd` with exactly the environment `env`. In this process by default
    (the typer app through its test runner: the same code from argument parsing to exit code,
    without a second of interpreter and SDK start-up); `process`: the real executable, for tests
    whose subject is the process (signals, what its children inherit, its exit as a whole)."""
    if process or EVERY_CALL_A_PROCESS:
        proc = subprocess.run([SCRIBE, *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                              timeout=timeout)
        return Ran(proc.returncode, proc.stdout, proc.stderr)
    return run_in_process(args, cwd, env, stdin)


def run_in_process(args: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None) -> Ran:
    """The command as `run_scribe` runs it in this process: the environment is replaced whole and
    the working folder changed for the call, then both put back. What escapes the app is what
    the executable would print as a traceback, with exit status 1."""
    from typer.testing import CliRunner

    from scribe.cli.app import app

    saved_env, saved_cwd, saved_umask = dict(os.environ), os.getcwd(), os.umask(0o022)
    saved_tempdir = tempfile.tempdir
    os.umask(saved_umask)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    # The temporary folder as a new process finds it, from `env` (TMPDIR): tempfile keeps the
    # one it found first for the life of the process.
    tempfile.tempdir = None
    try:
        result = CliRunner().invoke(app, args, input=stdin, catch_exceptions=True)
    finally:
        tempfile.tempdir = saved_tempdir
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        os.umask(saved_umask)
    err = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        err += "".join(traceback.format_exception(result.exception))
    return Ran(result.exit_code, result.stdout, err)


def session_logs(workspace: Path) -> list[Path]:
    """The workspace's session logs, oldest first by the creation time each records (ids have
    whole seconds only, and sessions run in process start several within one)."""
    from scribe.log.store import describe

    return sorted((workspace / ".scribe" / "sessions").glob("*.jsonl"),
                  key=lambda path: (describe(path).created or "", path.name))


def adopt(log: Path) -> None:
    """The person vouches for a log a test wrote or changed by hand, as `scribe log adopt` does:
    scribe then continues, undoes and curates from it like a log it sealed (log/seal.py)."""
    from scribe.log.jsonl import adopt_log

    adopt_log(log)


def events_of(path: Path) -> list[Event]:
    read = read_log(path)
    assert not read.problems, read.problems
    return read.events


def opened_for(config: AgentConfig, hub: McpHub | None = None) -> Opened:
    """The opening as the core assembles it (agent/opening.py), nobody asked anything."""
    return drive(assemble(config, hub=hub), lambda event: None)


def agent_on(server: FakeMessagesServer, workspace: Path, settings: Settings,
             monkeypatch: pytest.MonkeyPatch) -> TurnLoop:
    """A turn loop in this process, on a new session of `workspace`, whose calls go to `server`."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    return drive(opened_for(AgentConfig(workspace, settings=settings)).open(SessionChoice()), lambda event: None)


def agent_for(workspace: Path, settings: Settings, session: Session | None = None, *,
              choice: SessionChoice | None = None, hub: McpHub | None = None) -> TurnLoop:
    """A turn loop in this process through the opening (agent/opening.py), for `session` (one the
    test opened itself), else in the session `choice` names (default: a new one). Earlier
    sessions are not curated meanwhile (a model call the test did not script)."""
    opened = opened_for(AgentConfig(workspace, settings=dataclasses.replace(settings, curate_notes=False)), hub)
    if session is not None:
        return opened.adopt(session)
    return drive(opened.open(choice or SessionChoice()), lambda event: None)


def new_session(workspace: Path, settings: Settings, choice: SessionChoice | None = None) -> Session:
    """A session opened as the assembly opens it (a new one by default), without an agent."""
    return agent_for(workspace, settings, choice=choice).session


def running_in(workspace: Path, *argv: str) -> bool:
    """Whether a process with exactly this command line runs (not a zombie) in `workspace`."""
    wanted = "".join(f"{arg}\0" for arg in argv).encode()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "cmdline").read_bytes() == wanted and proc.joinpath("cwd").resolve() == workspace.resolve():
                return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            continue  # gone while we looked, or not ours to read
    return False


def sleep_argv(seconds: int) -> tuple[str, str]:
    """A `sleep` command line no other test, and no other test run on this machine, uses: this
    process's pid is the fraction, so `running(*sleep_argv(n))` finds only our own."""
    return ("sleep", f"{seconds}.{os.getpid()}")


def running(*argv: str) -> list[int]:
    """Live processes whose command line is exactly `argv`: how a test finds the `sleep 1234.5`
    it started, sandboxed or not (a sandboxed one has another pid inside its namespace)."""
    wanted = "".join(f"{arg}\0" for arg in argv).encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "cmdline").read_bytes() == wanted and (
                    proc / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                found.append(int(proc.name))
        except OSError:
            continue  # gone while we looked
    return found


def wait_for(condition: Callable[[], bool], seconds: float = 15) -> bool:
    """Poll until `condition` holds or `seconds` pass: a guard against hanging, not a timing
    assertion (callers assert the condition, never how long it took)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def spawn(args: list[str], workspace: Path, env: dict[str, str]) -> pexpect.spawn:
    return pexpect.spawn(SCRIBE, args, cwd=str(workspace), env=env, dimensions=(40, 120), encoding="utf-8",
                         timeout=20)


def configure(workspace: Path, home: Path, servers: str) -> None:
    """The workspace's own config, trusted by the person (as `scribe trust` does)."""
    config = workspace / ".scribe" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(servers)
    trust(workspace, home)


def left_running(needle: str) -> list[str]:
    """Live processes whose command line or environment names `needle` (a test's own folder)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if needle.encode() in cmdline or needle.encode() in environ:
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found
