"""The agent core: one object every front end drives, opened from one config value (AgentConfig),
taking submissions and giving back events (agent/protocol.py). The REPL, `scribe run` (every
output, and stream-json input), the Python API (api/) and a sub-agent's parent are all its
clients; none of them opens a model client, an MCP hub or a log writer of its own.

    agent = Agent(config)
    for event in agent.start(): ...                 the opening: questions, waits, the greeting
    for event in agent.run(UserMessage("...")): ... one submission's work, as it happens
    agent.submit(ApprovalAnswer(id, Decision.ALLOW)) from the loop above, or any thread
    agent.cancel()                                  any thread: what runs stops, recorded
    for event in agent.events(): ...                everything submitted, until End (stream-json)
    agent.close()

The work runs on the thread that iterates the events, so a front end keeps its own thread model
(the REPL its main thread, the async API a worker thread). A question (approval, trust, servers)
is an event; the core then waits for the submission that answers it, keeping any other that
arrives meanwhile for after. A cancel sets the opening's `cancelled` event, which every wait of a
turn looks at in slices (the model call, a command, a hook, an MCP call, a compression), so it
stops within a slice on any thread; one that arrives while the front end holds an event is thrown
into the work where it yielded. A KeyboardInterrupt that lands in the work (the REPL's Ctrl-C, a
signal that ends `scribe run`) is handled the same way.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

from scribe.agent.actions.shell import COMMAND_TOOL, ShellRefused, run_shell
from scribe.agent.actions.undo import undo
from scribe.agent.compression.ahead import AheadCompression, left_unfinished, works_ahead
from scribe.agent.compression.sizes import ContextSize
from scribe.agent.config import AgentConfig, SessionChoice
from scribe.agent.curation.curator import curate
from scribe.agent.loop import TurnLoop
from scribe.agent.opening import PERSON_WAITS_S, Opened, assemble
from scribe.agent.protocol import (
    AcceptPlan,
    ActionDone,
    ApprovalAnswer,
    ApprovalRequested,
    Cancel,
    Compact,
    Compacted,
    Curated,
    CurateNotes,
    CurationEnded,
    CurationStarted,
    End,
    Ended,
    Event,
    Failed,
    ModeChanged,
    ModelSwitched,
    NewSession,
    Resume,
    RunShell,
    ServersAnswer,
    ServersToConfirm,
    SetMode,
    ShellDone,
    Submission,
    SwitchModel,
    TrustAnswer,
    TrustRequested,
    TurnEnded,
    Undo,
    UserMessage,
)
from scribe.agent.session.session import Session, notes_path, store_for
from scribe.context.render import current_model
from scribe.log.events import InterruptEvent
from scribe.log.jsonl import LogError, LogWriteError
from scribe.log.open_calls import unanswered_tool_uses
from scribe.log.seal import SealError
from scribe.log.store import SessionNotFound
from scribe.model.errors import ClientSetupError, ModelError
from scribe.model.events import Notice
from scribe.settings.files import ConfigError
from scribe.settings.values import PermissionMode
from scribe.tools.mcp.hub import McpHub
from scribe.workspace.git.planted import describe
from scribe.workspace.git.repository import GitRefused, GitUnavailable

# What a submission's work may fail with that is the person's to hear about in one line, not a
# crash: the core says it (Failed) and goes on.
EXPECTED = (LogError, ConfigError, ModelError, ClientSetupError, SessionNotFound, GitUnavailable, GitRefused,
            ShellRefused, OSError)
# The message that starts carrying out an accepted plan (with the person's remark, if any).
PLAN_ACCEPTED = "The plan is accepted: carry it out."
# How long a wait for an answer or a submission sleeps before it looks for a cancel.
WAIT_SLICE_S = 0.05

Work = Generator[Event, Any, None]


@dataclass(frozen=True)
class _Wake:
    """Put on the queue by cancel(): a wait for an answer looks again."""


class Agent:
    """See the module's docstring. Not for use from several threads at once, except `submit`
    and `cancel`, which any thread may call at any time."""

    def __init__(self, config: AgentConfig, *, hub: McpHub | None = None) -> None:
        self.config = config
        self._hub = hub  # one made already (tests)
        self._submissions: queue.SimpleQueue[Submission | _Wake] = queue.SimpleQueue()
        # Submissions that arrived while a question waited for its answer: taken next, in order.
        self._held: deque[Submission] = deque()
        self._opened: Opened | None = None
        # Set by cancel(): shared with every wait of the work (the opening hands it on).
        self._cancelled = threading.Event()
        self._closed = False
        self._ended: Ended | None = None

    # -- the protocol ----------------------------------------------------------------------

    def submit(self, submission: Submission) -> None:
        """Hand the core a submission; any thread, any time. A Cancel acts at once."""
        if isinstance(submission, Cancel):
            self.cancel()
        else:
            self._submissions.put(submission)

    def cancel(self) -> None:
        """Stop what runs now, recording what it did; nothing when the core is idle."""
        self._cancelled.set()
        self._submissions.put(_Wake())

    def start(self) -> Generator[Event, None, None]:
        """Open: assemble the agent (asking what needs an answer) and start or continue the
        session the config names. Errors that stop the opening (bad configuration, no key, an
        unknown session) are raised; a KeyboardInterrupt too, once what was opened is closed."""
        if self._opened is not None:
            return
        try:
            opened = yield from self._drive(assemble(self.config, hub=self._hub, cancelled=self._cancelled,
                                                     children=Agent), raising=True)
            self._opened = opened
            self._cancelled.clear()
            yield from self._drive(self._open_session(self.config.choice, "resume" if self.config.choice.continues
                                                      else "startup"), raising=True)
        except BaseException:
            self.close()
            raise

    def run(self, submission: Submission) -> Generator[Event, None, None]:
        """Submit `submission` and yield the events of its work (and of any submitted before
        it), until its work ends."""
        yield from self.start()
        self.submit(submission)
        if isinstance(submission, Cancel):
            return
        while not self._closed:
            taken = self._take()
            yield from self._work_on(taken)
            if taken is submission:
                return

    def turn(self, message: UserMessage) -> Generator[Event, None, None]:
        """A turn: `run(message)`."""
        return self.run(message)

    def events(self) -> Generator[Event, None, None]:
        """Everything submitted, in order, as it is submitted (waiting when there is nothing to
        do), until End: the last event is Ended."""
        yield from self.start()
        while not self._closed:
            yield from self._work_on(self._take())

    def close(self) -> Ended:
        """End the session and stop the servers; what the teardown had to say is in Ended."""
        if self._ended is not None:
            return self._ended
        self._closed = True
        session_id = None
        lines: list[str] = []
        if self._opened is not None:
            if self._opened.has_session:
                session_id = self._opened.session.id
                self.finish_ahead()
                self._session_end("exit")
            lines = self._opened.close()
        left = tuple(self._opened.left) if self._opened is not None else ()
        self._ended = Ended(session_id, tuple(lines), left)
        return self._ended

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what front ends read (the state the events describe) ------------------------------

    @property
    def opened(self) -> Opened:
        assert self._opened is not None, "the agent has not been started"
        return self._opened

    @property
    def started(self) -> bool:
        return self._opened is not None

    @property
    def loop(self) -> TurnLoop:
        return self.opened.loop

    @property
    def session(self) -> Session:
        return self.opened.session

    @property
    def has_session(self) -> bool:
        return self._opened is not None and self._opened.has_session

    @property
    def compressing(self) -> bool:
        """A compression between turns is running (the REPL's bar says so)."""
        ahead = self.loop.ahead if self.has_session else None
        return ahead is not None and not ahead.done

    def context(self) -> ContextSize:
        """The next request's estimated size, by part."""
        memory = self.loop.memory
        assert memory is not None, "the opening always gives the loop a compressor"
        return memory.context(self.session)

    def start_curation(self) -> None:
        """Start curating earlier sessions now (the REPL, once its prompt is drawn)."""
        self.opened.start_curation()

    def curated(self) -> list[Curated]:
        """What the curation of earlier sessions finished since last asked."""
        return self.opened.curated() if self._opened is not None else []

    def take_ahead(self) -> list[Event]:
        """What a compression between turns made, taken into the log once it has ended."""
        if not self.has_session:
            return []
        loop = self.loop
        ahead = loop.ahead
        if ahead is None or not ahead.done:
            return []
        loop.ahead = None
        return list(ahead.take())

    # -- submissions, one at a time --------------------------------------------------------

    def _take(self) -> Submission:
        if self._held:
            return self._held.popleft()
        while True:
            item = self._submissions.get()
            if not isinstance(item, _Wake):
                return item

    def _work_on(self, submission: Submission) -> Iterator[Event]:
        if isinstance(submission, End):
            yield self.close()
            return
        self._cancelled.clear()  # a cancel made while idle stops nothing
        try:
            yield from self._drive(self._work(submission))
        finally:
            self._cancelled.clear()

    def _work(self, submission: Submission) -> Work:
        try:
            if isinstance(submission, UserMessage):
                yield from self._turn(submission)
            elif isinstance(submission, Compact):
                yield from self._compact(submission)
            elif isinstance(submission, SwitchModel):
                previous = current_model(self.session.events, self.session.chunks)
                yield ModelSwitched(submission.model, previous, self.opened.switch_model(submission.model))
            elif isinstance(submission, SetMode):
                self.opened.set_mode(submission.mode)
                yield ModeChanged(submission.mode)
            elif isinstance(submission, AcceptPlan):
                self.opened.set_mode(submission.mode)
                yield ModeChanged(submission.mode)
                text = PLAN_ACCEPTED + (f"\n\n{submission.remark}" if submission.remark.strip() else "")
                yield from self._turn(UserMessage(text))
            elif isinstance(submission, RunShell):
                yield from self._shell(submission.command)
            elif isinstance(submission, NewSession):
                yield from self._open_session(SessionChoice(), "clear")
            elif isinstance(submission, Resume):
                found = store_for(self.opened.workspace).find(submission.session, self.opened.workspace)
                if found.id == self.session.id:
                    yield ActionDone(f"already in session {found.id}")
                else:
                    yield from self._open_session(SessionChoice(session_id=found.id), "resume")
            elif isinstance(submission, Undo):
                loop = self.loop
                done = undo(self.session, self.opened.workspace, loop.watcher, box=loop.context.protection,
                            roots=loop.context.allowed_roots)
                yield ActionDone(done.message, done.done)
            elif isinstance(submission, CurateNotes):
                yield from self._curate()
            else:  # an answer with no question open: nothing waits for it
                yield Notice(f"nothing asked for {type(submission).__name__}; ignored", routine=True)
        except (LogWriteError, SealError):
            raise  # the log cannot be written: nothing can go on, and the front end says so
        except EXPECTED as exc:
            yield Failed(str(exc))

    def _open_session(self, choice: SessionChoice, source: str) -> Work:
        """End the session this one replaces (its session_end hooks), open the one `choice` names,
        and run its session_start hooks (`source`: startup, resume, clear)."""
        if self.has_session:
            yield from self.finish_ahead()
            self._session_end(source)
        yield from self.opened.open(choice)
        if self.config.child is None:  # a sub-agent's end is its parent's subagent_stop
            yield from self.loop.run_hooks("session_start", {"source": source, "model": current_model(
                self.session.events, self.session.chunks)})
            self.session.sync()

    def _session_end(self, reason: str) -> None:
        """The session_end hooks, as the session ends (what they say is in its log)."""
        if self.config.child is None:
            for _ in self.loop.run_hooks("session_end", {"reason": reason}):
                pass

    def _turn(self, message: UserMessage) -> Work:
        yield from self.take_ahead()
        loop = self.loop
        ended: TurnEnded | None = None
        try:
            ended = yield from loop.turn(message.text, message.images, message.command,
                                         attached_at=message.attached_at)
        except KeyboardInterrupt:
            ended = None
        if ended is None:
            # A cancel that landed outside the loop's own handling (as the turn began or ended):
            # whatever tool call it left open is closed, as the loop itself would close it.
            dangling = unanswered_tool_uses(self.session.events)
            if dangling:
                self.session.append(InterruptEvent, tool_use_ids=dangling, reason="cancelled by the user")
            self.session.sync()
            yield TurnEnded("interrupted", "", 0)
        yield from self._compress_ahead()

    def _compact(self, compact: Compact) -> Work:
        memory = self.loop.memory
        assert memory is not None, "the opening always gives the loop a compressor"
        yield from self.take_ahead()
        before = memory.context(self.session)
        yield from self.loop.run_hooks("pre_compact", {"trigger": "manual", "custom_instructions": compact.focus})
        try:
            yield from memory.compress_now(self.session, compact.focus)
        finally:
            self.session.sync()
        after = memory.context(self.session)
        yield Compacted(before.observations, before.raw, after.observations, after.raw, before.fixed)

    def _shell(self, command: str) -> Work:
        loop = self.loop
        ruling = loop.policy.decide(COMMAND_TOOL, "command", {"command": command})
        if ruling.verdict == "deny" and ruling.rule is not None:
            raise ShellRefused(f"not run: the {ruling.rule.describe()} refuses it")
        if loop.policy.mode == PermissionMode.READ_ONLY:
            raise ShellRefused(f"!command runs nothing in permission mode read-only; {loop.policy.how_to_allow} ask "
                               "(or any other mode) runs it")
        ran = run_shell(command, tools=loop.tools, context=loop.context, session=self.session, watcher=loop.watcher)
        out = ran.output
        yield ShellDone(command, out.text, out.exit_code, out.is_error,
                        describe(out.git_config) if out.git_config else None)

    def _curate(self) -> Work:
        yield CurationStarted(earlier=False)
        try:
            outcome = curate(self.session, self.opened.client, self.opened.settings, notes_path(self.opened.workspace),
                            asked=True)
        except KeyboardInterrupt:
            yield CurationEnded(skipped=True)
            return
        yield Curated(outcome.message, outcome.noteworthy)
        yield CurationEnded()

    # -- compression between turns (a person waits on each call) ---------------------------

    def _compress_ahead(self) -> Work:
        """After a turn, where a person reads and types: what the next call would compress,
        compressed now in a thread (agent/compression/ahead.py). Nobody waits for it. One the
        turn started that has ended is taken first: it compressed what came before the turn,
        and the turn itself may be due now."""
        if not self.config.person:
            return
        yield from self.take_ahead()
        loop = self.loop
        if loop.ahead is None and loop.memory is not None and works_ahead(
                self.opened.settings.observe_ahead, os.environ.get("ANTHROPIC_BASE_URL"), self.session.events):
            loop.ahead = AheadCompression(loop.memory, self.session)

    def finish_ahead(self) -> list[Event]:
        """The session ends: a compression between turns gets a moment to end, and is taken
        (what it did, to be shown); one still waiting on its model is left, and the log says so."""
        if not self.has_session or self.loop.ahead is None:
            return []
        if not self.loop.ahead.wait(PERSON_WAITS_S):
            self.loop.ahead = None
            left_unfinished(self.session)
            return []
        return self.take_ahead()

    # -- driving one piece of work ---------------------------------------------------------

    def _drive(self, work: Generator[Any, Any, Any], *, raising: bool = False) -> Generator[Event, Any, Any]:
        """Run `work` to its end, yielding its events; what it returns. A question it yields is
        answered from the submissions; a cancel is thrown into it where it yielded, and a
        KeyboardInterrupt raised while the front end held an event (its Ctrl-C) likewise.
        `raising`: a KeyboardInterrupt that escapes the work goes on up (the opening); else it
        ends the work quietly (the work recorded what it did)."""
        send: Any = None
        throw: BaseException | None = None
        while True:
            try:
                event = work.throw(throw) if throw is not None else work.send(send)
            except StopIteration as done:
                return done.value
            except KeyboardInterrupt:
                if raising:
                    raise
                return None
            send, throw = None, None
            try:
                yield event
                if isinstance(event, ApprovalRequested | TrustRequested | ServersToConfirm):
                    send = self._answer(event)
            except KeyboardInterrupt as interrupt:
                throw = interrupt
                continue
            if self._cancelled.is_set():
                self._cancelled.clear()
                throw = KeyboardInterrupt()
        # (unreachable: the loop returns)

    def _answer(self, question: Event) -> Any:
        """Wait for the submission that answers `question`; hold back any other. A cancel (or
        End) while it waits stops the work (KeyboardInterrupt)."""
        while True:
            if self._cancelled.is_set():
                self._cancelled.clear()
                raise KeyboardInterrupt
            try:
                item = self._submissions.get(timeout=WAIT_SLICE_S)
            except queue.Empty:
                continue
            if isinstance(item, _Wake):
                continue
            if isinstance(question, ApprovalRequested) and isinstance(item, ApprovalAnswer) \
                    and item.request_id == question.id:
                return item
            if isinstance(question, TrustRequested) and isinstance(item, TrustAnswer):
                return item
            if isinstance(question, ServersToConfirm) and isinstance(item, ServersAnswer) \
                    and item.name == question.name:
                return item
            self._held.append(item)
            if isinstance(item, End):
                # Nobody will answer now: the question is declined, and the work stops.
                raise KeyboardInterrupt("the session was ended while a question waited")

