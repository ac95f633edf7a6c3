"""The REPL in process, for tests: keys go in through prompt-toolkit's pipe input, the model is
the fake Messages API, tools act on a real git workspace, and what rich prints is captured.
`person` is the environment of a person in the workspace (an autouse fixture where imported)."""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from helpers import as_a_person, wait_for
from scribe.agent.config import AgentConfig, SessionChoice
from scribe.agent.core import Agent
from scribe.cli.repl.repl import Repl
from scribe.cli.repl.view import View
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.settings.values import Settings, load_settings

CTRL_D = "\x04"


@pytest.fixture(autouse=True)
def person(monkeypatch: pytest.MonkeyPatch, workspace: Path, tmp_path: Path) -> Iterator[None]:
    """A person in the workspace with no stray config (the fake API's URL is set per test), who
    answers the trust question with Enter: no (the pipe feeds prompt-toolkit, not the plain
    terminal read the question uses; the real question is tested in a terminal)."""
    as_a_person(monkeypatch, workspace, tmp_path / "home")
    monkeypatch.setattr("scribe.cli.repl.repl.ask_trust", lambda console, question: False)
    yield


@dataclass
class Ran:
    out: str  # what rich printed
    toolbar: str  # the bottom bar after the last line
    server: FakeMessagesServer
    texts: list[str]  # the user texts the model received, request by request


def run_repl(workspace: Path, script: list[Reply] | FakeMessagesServer, keys: str, *, mode: str = "ask",
             choice: SessionChoice | None = None, during: threading.Thread | None = None,
             leave_when: Callable[[Repl], bool] | None = None, opened: Callable[[Repl], None] | None = None) -> Ran:
    """Type `keys` into a REPL in `workspace` until they run out (then the input ends: Ctrl-D).
    `leave_when`: a person who reads before leaving, typing Ctrl-D only once it holds (or after
    60 s). `opened` is handed the REPL once it is open. A server passed in is left running (its
    prompt cache outlives this REPL)."""
    out = io.StringIO()
    owned = not isinstance(script, FakeMessagesServer)
    server = FakeMessagesServer(script) if not isinstance(script, FakeMessagesServer) else script
    os.environ["ANTHROPIC_BASE_URL"] = server.start()
    try:
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            pipe.send_text(keys if leave_when is not None else keys + CTRL_D)
            settings = load_settings(workspace, {"permission_mode": mode, "max_retries": 0})
            with open_repl(workspace, settings, View(Console(file=out, width=110)), choice) as repl:
                if opened is not None:
                    opened(repl)
                if during is not None:
                    during.start()
                if leave_when is not None:
                    when = leave_when

                    def leave() -> None:
                        wait_for(lambda: when(repl), 60)
                        pipe.send_text(CTRL_D)

                    threading.Thread(target=leave, daemon=True).start()
                repl.loop()
                toolbar = repl.toolbar()
    finally:
        if owned:
            server.stop()
    texts = [_last_user_text(r.json) for r in server.requests]
    return Ran(out.getvalue(), toolbar, server, texts)


@contextmanager
def open_repl(workspace: Path, settings: Settings, view: View, choice: SessionChoice | None = None) -> Iterator[Repl]:
    """A REPL over the agent core as `scribe` opens one (agent/core.py), in its session; closed
    (the exit line said) when the block ends."""
    config = AgentConfig(workspace, choice or SessionChoice(), settings=settings, person=True, answers=True)
    repl = Repl(Agent(config), view)
    try:
        repl.begin()
        repl.agent.start_curation()  # as `scribe` does once its prompt is drawn
        yield repl
    finally:
        repl.close()


def _last_user_text(body: dict) -> str:  # type: ignore[type-arg]
    content = body["messages"][-1]["content"]
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")
