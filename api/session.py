"""The Python API: a session of the agent core (agent/core.py) for programs, sync and async.

    import scribe

    with scribe.open_session("path/to/repo", permission_mode="ask") as session:
        for event in session.send("add a --verbose flag"):
            if isinstance(event, scribe.ApprovalRequested):
                session.answer(event, scribe.Decision.ALLOW)
        print(session.result.text)

    async with scribe.open_async_session("path/to/repo") as session:
        async for event in session.send("and test it"):
            ...

A session is the same thing `scribe` and `scribe run` drive: the same log, tools, sandbox,
permission modes, hooks and memory. Events and submissions are the protocol's own types
(agent/protocol.py). An approval request waits until it is answered (`answer`), `cancel` stops the
running turn from any thread, and closing the session ends it (its log stays; `session_id`
continues it later).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.agent.config import AgentConfig, Overrides, SessionChoice
from scribe.agent.core import Agent
from scribe.agent.protocol import (
    ApprovalAnswer,
    ApprovalRequested,
    Decision,
    End,
    Event,
    Submission,
    TurnEnded,
    UserMessage,
)
from scribe.settings.values import PermissionMode, Settings
from scribe.workspace.images import PreparedImage


@dataclass(frozen=True)
class Options:
    """How a session opens, as `scribe run` takes it on its command line."""

    cwd: Path
    permission_mode: PermissionMode | None = None
    model: str | None = None
    max_turns: int | None = None
    session_id: str | None = None  # continue this session
    continue_latest: bool = False  # continue the latest session of the workspace
    trust_workspace: bool = False  # apply the workspace's own config files this once
    settings: Settings | None = None  # the settings whole, instead of files and environment

    def config(self) -> AgentConfig:
        mode = PermissionMode(self.permission_mode) if self.permission_mode is not None else None
        return AgentConfig(self.cwd, SessionChoice(self.continue_latest, self.session_id, self.model),
                           Overrides(permission_mode=mode, model=self.model, max_turns=self.max_turns),
                           settings=self.settings, trust_workspace=self.trust_workspace, answers=True)


class Session:
    """A session driven from this thread: `send` yields a turn's events as they happen."""

    def __init__(self, options: Options) -> None:
        self._agent = Agent(options.config())
        # The opening's events (the greeting, notices), for whoever wants them.
        self.opening: list[Event] = list(self._agent.start())
        self.result: TurnEnded | None = None  # the last turn's end

    @property
    def session_id(self) -> str:
        return self._agent.session.id

    @property
    def log(self) -> Path:
        """The session's log file (`scribe log show ID` reads it)."""
        return self._agent.session.path

    def send(self, text: str, images: Sequence[PreparedImage] = ()) -> Iterator[Event]:
        """One turn: `text` to the model, and every event until the turn's end (TurnEnded, also
        kept as `result`)."""
        return self.run(UserMessage(text, tuple(images)))

    def run(self, submission: Submission) -> Iterator[Event]:
        """Any submission of the protocol (a compaction, a model switch, a mode), its events."""
        for event in self._agent.run(submission):
            if isinstance(event, TurnEnded):
                self.result = event
            yield event

    def answer(self, request: ApprovalRequested, decision: Decision | str, remark: str = "") -> None:
        """Answer an approval request (from the loop over `send`, or any thread)."""
        self._agent.submit(ApprovalAnswer(request.id, Decision(decision), remark))

    def cancel(self) -> None:
        """Stop the running turn, recording what it did (any thread)."""
        self._agent.cancel()

    def close(self) -> None:
        self._agent.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_DONE = object()


class AsyncSession:
    """A session for asyncio: the core runs in a thread of its own, its events come through a
    queue; `answer` and `cancel` reach it at once."""

    def __init__(self, options: Options) -> None:
        self._options = options
        self._agent = Agent(options.config())
        self.opening: list[Event] = []
        self.result: TurnEnded | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> AsyncSession:
        self.opening = [event async for event in self._events(self._agent.start())]
        return self

    @property
    def session_id(self) -> str:
        return self._agent.session.id

    @property
    def log(self) -> Path:
        return self._agent.session.path

    async def send(self, text: str, images: Sequence[PreparedImage] = ()) -> AsyncIterator[Event]:
        async for event in self.run(UserMessage(text, tuple(images))):
            yield event

    async def run(self, submission: Submission) -> AsyncIterator[Event]:
        async with self._lock:  # one submission's work at a time, as the core takes them
            async for event in self._events(self._agent.run(submission)):
                if isinstance(event, TurnEnded):
                    self.result = event
                yield event

    def answer(self, request: ApprovalRequested, decision: Decision | str, remark: str = "") -> None:
        self._agent.submit(ApprovalAnswer(request.id, Decision(decision), remark))

    def cancel(self) -> None:
        self._agent.cancel()

    async def close(self) -> None:
        self._agent.submit(End())
        await asyncio.to_thread(self._agent.close)

    async def __aenter__(self) -> AsyncSession:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _events(self, events: Iterator[Event]) -> AsyncIterator[Event]:
        """`events` iterated in a worker thread, handed over one by one."""
        loop = asyncio.get_running_loop()
        handed: asyncio.Queue[Any] = asyncio.Queue()

        def work() -> None:
            try:
                for event in events:
                    loop.call_soon_threadsafe(handed.put_nowait, event)
            except BaseException as exc:  # handed to the awaiting side, which raises it
                loop.call_soon_threadsafe(handed.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(handed.put_nowait, _DONE)

        worker = threading.Thread(target=work, name="scribe-session", daemon=True)
        worker.start()
        while True:
            item = await handed.get()
            if item is _DONE:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
        await asyncio.to_thread(worker.join)


def open_session(cwd: str | Path = ".", **options: Any) -> Session:
    """A session in the workspace around `cwd` (options: permission_mode, model, max_turns,
    session_id, continue_latest, trust_workspace, settings)."""
    return Session(Options(Path(cwd), **options))


def open_async_session(cwd: str | Path = ".", **options: Any) -> AsyncSession:
    """The same for asyncio: `async with scribe.open_async_session(...) as session:`."""
    return AsyncSession(Options(Path(cwd), **options))
