"""Replaying a scripted session in one process, as the REPL runs it (one agent for every turn,
the notes curated once at the end), through the real loop, tools, log and SDK against the fake
API; and reading figures off what the server billed."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.agent.builtins import new_session_tools
from scribe.agent.config import AgentConfig
from scribe.agent.curation.curator import curate
from scribe.agent.driver import drive
from scribe.agent.opening import assemble
from scribe.agent.protocol import TurnEnded
from scribe.agent.session.session import notes_path
from scribe.agent.session.start import start_session
from scribe.fakeapi import FakeMessagesServer, RecordedRequest, tool_use_block
from scribe.fakeapi.cache import flatten_request
from scribe.fakeapi.script import Reply
from scribe.log.events import Event
from scribe.log.jsonl import read_log
from scribe.settings.values import Settings
from scribe.tools.registry import tool_definitions

from .scripted_model import ScriptedModel
from .sessions import ScriptedSession


@dataclass
class Replay:
    session: ScriptedSession
    requests: list[RecordedRequest]
    events: list[Event]
    log_path: Path
    calls: dict[str, int]
    seconds: float


@contextmanager
def temporary_repository() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="scribe-bench-") as tmp:
        root = Path(tmp).resolve()
        for args in (["init", "-q"], ["config", "user.email", "bench@scribe.invalid"],
                     ["config", "user.name", "bench"]):
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
        yield root


def replay(session: ScriptedSession, settings: Settings, *, recall_fact: str | None = None) -> Replay:
    """Run every turn of `session`; with `recall_fact`, end with a turn whose model asks recall
    for that fact (the benchmark then checks the exact text came back)."""
    model = ScriptedModel(session)
    started = time.monotonic()
    with temporary_repository() as workspace, FakeMessagesServer(model) as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url
        os.environ.setdefault("ANTHROPIC_API_KEY", "benchmark-no-key")
        os.environ["SCRIBE_HOME"] = str(workspace / ".scribe")
        try:
            config = AgentConfig(workspace, settings=dataclasses.replace(settings, max_retries=0), servers=False)
            opened = drive(assemble(config), lambda event: None)
            agent = opened.adopt(start_session(workspace, settings, tool_definitions(new_session_tools(settings))))
            log = agent.session
            turns = [t.prompt for t in session.turns]
            if recall_fact is not None:
                model.replies.append(Reply([tool_use_block("recall", {"query": recall_fact})]))
                model.replies.append(Reply.text("Recalled."))
                turns.append(f"What exactly did we say about {recall_fact!r}?")
            for prompt in turns:
                ended = [e for e in agent.turn(prompt) if isinstance(e, TurnEnded)][-1]
                if ended.reason != "end_turn":
                    raise RuntimeError(f"turn ended with {ended.reason}: {ended.error}")
            if settings.curate_notes:  # as the next new session does
                curate(log, agent.model, settings, notes_path(workspace))
            log.close()
            events = read_log(log.path).events
            return Replay(session, list(server.requests), events, log.path, dict(model.calls),
                          time.monotonic() - started)
        finally:
            del os.environ["SCRIBE_HOME"]


def prompt_tokens(body: dict[str, Any]) -> int:
    return sum(b.tokens for b in flatten_request(body))


def shared_prefix_tokens(earlier: dict[str, Any], later: dict[str, Any]) -> int:
    """Tokens of the longest common block prefix of two requests (what a cache could serve)."""
    if earlier.get("model") != later.get("model"):
        return 0
    shared = 0
    for a, b in zip(flatten_request(earlier), flatten_request(later), strict=False):
        if (a.kind, _plain(a.block)) != (b.kind, _plain(b.block)):
            break
        shared += a.tokens
    return shared


def _plain(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}
