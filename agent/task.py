"""Sub-agents: the `task` calls of one model answer (tools/task.py), each run as a session of its
own opened through the agent core, all at the same time.

    parent's loop --task calls--> Subagents.run --> one child core per call, each in a thread
                  <--events------              <--- their events (approvals forwarded, named)
                  <--results------             <--- each child's final answer, or what it has

A child is a session like any other: its own log (sealed, its header naming the parent session and
the task call that started it; the parent's tool result names the child's session), its own
prompt (a sub-agent's instructions, its kind's role, the environment: children of one kind share a
cached prefix), the parent's built-in tools less `task` (or the subset its kind names), and a
permission mode never wider than its parent's, under the parent's rules. An approval a child needs
is asked where the parent's are, naming the child; a cancel of the parent reaches every child.

Whatever happens, the call's result says it: the child's final answer when it ends its turn;
otherwise how it ended (max_tokens, an error, cancelled) with what it had written and the tools it
had called, and where its log is. Nothing it did is lost: its log holds it all.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from scribe.agent.config import AgentConfig, ChildOf
from scribe.agent.permissions import WIDTH, PermissionPolicy
from scribe.agent.protocol import (
    AgentEvent,
    ApprovalAnswer,
    ApprovalRequested,
    AssistantMessage,
    Decision,
    Ended,
    Event,
    SessionOpened,
    SubagentEvent,
    Submission,
    ToolCall,
    TurnEnded,
    UserMessage,
)
from scribe.settings.agents import GENERAL, AgentSpec
from scribe.settings.values import PermissionMode, Settings
from scribe.tools.base import ToolOutput, stop_if_cancelled

TASK = "task"
# How long the parent waits on its children without looking for a cancel.
WAIT_SLICE_S = 0.05
# After a cancel, how long the children get to record how they stopped.
STOPPING_S = 10.0
# The tool calls a failed child's result lists, at most.
CALLS_SHOWN = 12


class ChildSession(Protocol):
    """A sub-agent as its parent drives it: the agent core (agent/core.py) is one."""

    def start(self) -> Iterator[Event]: ...
    def run(self, submission: Submission) -> Iterator[Event]: ...
    def submit(self, submission: Submission) -> None: ...
    def cancel(self) -> None: ...
    def close(self) -> Ended: ...


class ChildFactory(Protocol):
    """Opens a sub-agent from its config (agent/core.py's Agent class)."""

    def __call__(self, config: AgentConfig) -> ChildSession: ...


class TasksInterrupted(KeyboardInterrupt):
    """The parent's turn was cancelled while its sub-agents ran: each stopped, and `outputs`
    holds each call's result as it stood."""

    def __init__(self, outputs: dict[str, ToolOutput], cause: KeyboardInterrupt) -> None:
        super().__init__(str(cause))
        self.outputs, self.cause = outputs, cause


@dataclass(frozen=True)
class Parent:
    """What a parent's sub-agents take from it, as its turn stands."""

    session_id: str
    model: str
    policy: PermissionPolicy
    tools: tuple[str, ...]  # the parent's built-in tool names, in order
    agents: dict[str, AgentSpec]
    asks: bool  # the parent's approvals are answered: so are its children's


@dataclass
class _Child:
    call: ToolCall
    spec: AgentSpec
    agent: ChildSession
    label: str
    session_id: str | None = None
    log: Path | None = None
    ended: TurnEnded | None = None
    failure: BaseException | None = None
    texts: list[str] = field(default_factory=list)  # each model call's text, as it came
    called: list[str] = field(default_factory=list)  # each tool call it made, as its line shows it
    done: bool = False

    def work(self, prompt: str, events: queue.SimpleQueue[tuple[_Child, Any]]) -> None:
        try:
            for event in self.agent.start():
                events.put((self, event))
            for event in self.agent.run(UserMessage(prompt)):
                events.put((self, event))
        except BaseException as exc:  # noqa: BLE001 - handed to the parent, whose result says it
            events.put((self, exc))
        finally:
            try:
                self.agent.close()
            finally:
                events.put((self, _DONE))


_DONE = object()


class Subagents:
    """Runs task calls for one opening: each as a child core from `factory`, under `settings`
    (narrowed per child), in `workspace`."""

    def __init__(self, factory: ChildFactory, workspace: Path, settings: Settings, *, trust_workspace: bool,
                 cancelled: threading.Event) -> None:
        self.factory, self.workspace, self.settings = factory, workspace, settings
        self.trust_workspace = trust_workspace
        self.cancelled = cancelled

    def run(self, parent: Parent, calls: Sequence[ToolCall]) -> Generator[AgentEvent, ApprovalAnswer | None,
                                                                           dict[str, ToolOutput]]:
        """Every call's sub-agent at once; the result of each, by tool_use id. Approvals the
        children ask are yielded (named) and their answers sent back; a cancel stops them all and
        raises TasksInterrupted with what each had."""
        events: queue.SimpleQueue[tuple[_Child, Any]] = queue.SimpleQueue()
        children = [self._child(parent, call) for call in calls]
        for child in children:
            prompt = str(child.call.args.get("prompt", ""))
            threading.Thread(target=child.work, args=(prompt, events), name=f"scribe-task-{child.label}",
                             daemon=True).start()
        try:
            while not all(child.done for child in children):
                stop_if_cancelled(self.cancelled)
                try:
                    child, item = events.get(timeout=WAIT_SLICE_S)
                except queue.Empty:
                    continue
                yield from self._take(child, item)
        except KeyboardInterrupt as stop:
            self._stop(children, events)
            raise TasksInterrupted({c.call.id: result_of(c, cancelled=True) for c in children}, stop) from None
        return {child.call.id: result_of(child) for child in children}

    def _child(self, parent: Parent, call: ToolCall) -> _Child:
        name = str(call.args.get("agent") or GENERAL)
        spec = parent.agents.get(name) or parent.agents[GENERAL]
        tools = tuple(t for t in parent.tools if t != TASK and (spec.tools is None or t in spec.tools))
        settings = replace(self.settings, model=spec.model or parent.model,
                           permission_mode=narrower(parent.policy.mode, self.settings.permission_mode),
                           curate_notes=False, watch_files=False, task_tool=False, auto_commit=False,
                           observe_ahead="never")
        config = AgentConfig(self.workspace, settings=settings, trust_workspace=self.trust_workspace,
                             answers=parent.asks, servers=False,
                             rules=(*parent.policy.rules, *parent.policy.session_rules),
                             child=ChildOf(parent.session_id, call.id, spec, tools))
        return _Child(call, spec, self.factory(config), label=f"{spec.name}: {call.args.get('description', '')}"[:80])

    def _take(self, child: _Child, item: Any) -> Generator[AgentEvent, ApprovalAnswer | None, None]:
        if item is _DONE:
            child.done = True
        elif isinstance(item, BaseException):
            child.failure = item
        elif isinstance(item, SessionOpened):
            child.session_id, child.log = item.session_id, item.path
            yield SubagentEvent(child.label, item.session_id, item)
        elif isinstance(item, ApprovalRequested):
            # Asked where the parent's are, naming the child; the answer goes back to the child.
            answer = yield ApprovalRequested(f"{child.session_id}/{item.id}", item.call, item.mode,
                                             agent=f"{child.label} (session {child.session_id})",
                                             question=item.question)
            child.agent.submit(ApprovalAnswer(item.id, answer.decision if answer is not None else Decision.DECLINE,
                                              answer.remark if answer is not None else "",
                                              answer.keep if answer is not None else None))
        else:
            if isinstance(item, AssistantMessage):
                child.texts.append("".join(b.get("text", "") for b in item.event.content if b.get("type") == "text"))
            elif isinstance(item, ToolCall):
                child.called.append(f"{item.name} {item.summary}".strip())
            elif isinstance(item, TurnEnded):
                child.ended = item
            if isinstance(item, ToolCall | TurnEnded):
                yield SubagentEvent(child.label, child.session_id or "", item)

    def _stop(self, children: Sequence[_Child], events: queue.SimpleQueue[tuple[_Child, Any]]) -> None:
        """Cancel every child still running and let each record how it stopped (a moment at most)."""
        for child in children:
            if not child.done:
                child.agent.cancel()
        waited = 0.0
        while not all(child.done for child in children) and waited < STOPPING_S:
            try:
                child, item = events.get(timeout=WAIT_SLICE_S)
            except queue.Empty:
                waited += WAIT_SLICE_S
                continue
            if item is _DONE:
                child.done = True
            elif isinstance(item, TurnEnded):
                child.ended = item
            elif isinstance(item, AssistantMessage):
                child.texts.append("".join(b.get("text", "") for b in item.event.content if b.get("type") == "text"))
            elif isinstance(item, ToolCall):
                child.called.append(f"{item.name} {item.summary}".strip())
            elif isinstance(item, ApprovalRequested):
                child.agent.submit(ApprovalAnswer(item.id, Decision.STOP))


def narrower(mode: PermissionMode, other: PermissionMode) -> PermissionMode:
    """The narrower of two modes (a sub-agent never runs wider than its parent)."""
    return mode if WIDTH.index(mode) <= WIDTH.index(other) else other


def result_of(child: _Child, *, cancelled: bool = False) -> ToolOutput:
    """What the parent's model reads of a child: its final answer when it ended its turn; else how
    it ended, what it had written and called, and where its work is."""
    ended = child.ended
    where = (f"its whole work is in its log (session {child.session_id}: `scribe log show {child.session_id}`)"
             if child.session_id else "it had not started its session")
    record: dict[str, Any] = {"session": child.session_id, "agent": child.spec.name,
                              "reason": ended.reason if ended is not None else ("cancelled" if cancelled else "error"),
                              "calls": ended.calls if ended is not None else len(child.texts)}
    if ended is not None and ended.reason == "end_turn" and ended.text.strip() and not cancelled:
        return ToolOutput(ended.text, child=record)
    if child.failure is not None and not isinstance(child.failure, KeyboardInterrupt):
        why = f"the sub-agent could not go on: {child.failure}"
    elif ended is None or ended.reason == "interrupted" or cancelled:
        why = "the sub-agent was cancelled before it finished"
    elif ended.reason == "max_tokens":
        why = "the sub-agent stopped mid-answer: it reached max_tokens"
    elif ended.reason == "max_turns":
        why = f"the sub-agent stopped after {ended.calls} model calls (max_turns) before it finished"
    elif ended.reason == "error":
        why = f"the sub-agent failed: {ended.error}"
    elif ended.reason == "refusal":
        why = "the model refused the sub-agent's task"
    else:
        why = "the sub-agent ended without an answer"
    record["error"] = why
    lines = [f"[{why}; {where}]"]
    written = "\n".join(text for text in child.texts if text.strip()).strip()
    if ended is not None and ended.text.strip() and ended.text.strip() not in written:
        written = (written + "\n" + ended.text).strip()
    if written:
        lines += ["What it had written:", written]
    if child.called:
        shown = child.called[-CALLS_SHOWN:]
        more = len(child.called) - len(shown)
        lines += [f"The tool calls it made ({len(child.called)}{f', the last {len(shown)}' if more else ''}):",
                  *(f"- {call}" for call in shown)]
    if not written and not child.called:
        lines.append("It had written nothing and called no tool.")
    return ToolOutput("\n".join(lines), is_error=True, child=record)
