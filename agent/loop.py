"""The turn loop: render the log, call the model, run its tool calls, append everything.

    user event -> { outside changes, compress? -> render -> model call -> assistant + usage
                    -> tool results } until the model stops calling tools -> auto-commit?

Every step appends to the log before the next one starts, so whatever stops the loop (the
person, a crash, an API failure) leaves a log the next render can continue from.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from scribe.agent.actions.autocommit import TurnCommitter
from scribe.agent.compression.ahead import AheadCompression
from scribe.agent.compression.compressor import Compressor, Room
from scribe.agent.hooks.runner import STOP_BLOCKS, HookRunner, HookVerdict, blocked_result
from scribe.agent.permissions import PermissionPolicy, Ruling
from scribe.agent.protocol import (
    AgentEvent,
    ApprovalAnswer,
    ApprovalRequested,
    AssistantMessage,
    CompressionWait,
    Decision,
    ModelCallStarted,
    Notice,
    StopReason,
    ToolCall,
    ToolDone,
    TurnEnded,
)
from scribe.agent.session import abilities
from scribe.agent.session.session import Session
from scribe.agent.task import TASK, Parent, Subagents, TasksInterrupted
from scribe.context.render import current_model, file_change_text, render
from scribe.log.events import (
    AssistantEvent,
    ErrorEvent,
    FileChangeEvent,
    GitConfigEvent,
    InterruptEvent,
    LeftOutEvent,
    ToolResultEvent,
    UsageEvent,
)
from scribe.log.open_calls import unanswered_tool_uses
from scribe.memory.routes import current_turn_start
from scribe.model.client import CallResult, ModelClient
from scribe.model.errors import ContextOverflow, ModelError
from scribe.model.window import Overflow
from scribe.settings.agents import AgentSpec
from scribe.settings.hooks import NO_HOOKS, HookName, Hooks
from scribe.tools.base import (
    CommandInterrupted,
    OutputTail,
    Tool,
    ToolContext,
    ToolOutput,
    kind_of,
    stop_if_cancelled,
)
from scribe.tools.command import git_watch
from scribe.tools.registry import refused_before, run_tool
from scribe.workspace.git.folders import command_protection
from scribe.workspace.git.planted import describe
from scribe.workspace.images import PreparedImage
from scribe.workspace.sandbox.protection import Protection
from scribe.workspace.watcher.changes import ChangeSource

# The longest the loop waits on a compression between turns without looking for a cancel.
WAIT_SLICE_S = 0.05


@dataclass
class _Pending:
    """A tool call between its asking and its result."""

    call: ToolCall
    tool: Tool | None
    started: float
    seen_before: dict[str, str]
    denial: str | None = None  # why it does not run; None: it runs
    refusal: str | None = None  # the tool's own refusal, said before anyone is asked; it does not run
    permission: str | None = None
    ruling: Ruling | None = None


@dataclass
class TurnLoop:
    """One session's turns. A question the permission mode asks is yielded as ApprovalRequested
    and answered by what is sent back into the turn (a Decision; agent/core.py sends it)."""

    session: Session
    model: ModelClient
    tools: list[Tool]
    context: ToolContext
    policy: PermissionPolicy
    max_turns: int = 50
    # Approval requests are answered; otherwise what the mode asks about is refused.
    asks: bool = False
    memory: Compressor | None = None
    # Files changed outside the agent's tools, drained at safe points (workspace/watcher/watcher.py).
    watcher: ChangeSource | None = None
    # Commits the files the turn's file tools wrote, at the turn's end (auto_commit).
    committer: TurnCommitter | None = None
    # A compression started between turns, still running or not yet taken (agent/compression/ahead.py).
    ahead: AheadCompression | None = None
    # A person waits on each call (the REPL): a compression the window does not need is started
    # in the background as the call goes ahead, instead of before it (agent/compression/ahead.py).
    compress_off_path: bool = False
    # Nobody waits between turns, and what the session leaves is compressed after it
    # (agent/finishing/): a compression the window does not need is not made before a call.
    compress_after: bool = False
    # The configured hooks (settings/hooks.py), run by agent/hooks/runner.py at their points of a turn.
    hooks: Hooks = NO_HOOKS
    # Set when what runs is cancelled (agent/core.py): every wait of the turn looks at it.
    cancelled: threading.Event = field(default_factory=threading.Event)
    # Runs the task calls: each a sub-agent of this session (agent/task.py); None: no task tool.
    subagents: Subagents | None = None

    def turn(self, prompt: str, images: Sequence[PreparedImage] = (), command: dict[str, Any] | None = None,
             *, attached_at: int | None = None) -> Generator[AgentEvent, ApprovalAnswer | None, TurnEnded]:
        """Run one user turn to its end, yielding what happens as it happens; its end is the
        last event, and what it returns. `images`: attached to the message (sent before its
        text); `command`: the slash command whose text `prompt` is; `attached_at`: where in
        `prompt` the files its `@path` words attached begin (agent/actions/attach.py). Both are recorded
        with the message in the log, never sent."""
        if self.committer is not None:
            self.committer.begin_turn(self.session)
        if self.watcher is not None and (problem := self.watcher.start()) is not None:
            yield Notice(problem)
            self.watcher = None
        origin = {**({"command": command} if command else {}),
                  **({"attached_at": attached_at} if attached_at is not None else {})}
        ended = yield from self._turn(prompt, images, origin)
        if self.committer is not None:
            yield from self.committer.end_turn(self.session, self.context.seen_hashes, prompt)
        yield ended
        return ended

    def close(self) -> None:
        """Stop watching the workspace (the session is closed by its owner)."""
        if self.watcher is not None:
            self.watcher.stop()

    def _turn(self, prompt: str, images: Sequence[PreparedImage],
              origin: dict[str, Any]) -> Generator[AgentEvent, ApprovalAnswer | None, TurnEnded]:
        calls = 0
        final_text = ""
        stops = 0  # times a stop hook sent the model back to work
        try:
            verdict = yield from self.run_hooks("user_prompt_submit", {"prompt": prompt}, log=False)
            if verdict.blocked:
                HookRunner.log(self.session, verdict)
                return TurnEnded("error", "", 0, error=f"not sent: a user_prompt_submit hook blocked it: "
                                                       f"{verdict.reason or '(it gave no reason)'}")
            user = self.session.append_message(prompt, images, **origin)
            if verdict.records or verdict.planted:  # what a hook added follows the message
                HookRunner.log(self.session, verdict)
            while True:
                if calls >= self.max_turns:
                    return TurnEnded("max_turns", final_text, calls)
                calls += 1
                yield from self._outside_changes()
                if self.memory is not None and (yield from self._settle_ahead()):
                    yield from self._compress()
                yield ModelCallStarted(calls)
                try:
                    result = yield from self._call()
                except ContextOverflow as overflow:
                    # Refused for its size: compress and send the same turn once more. Nothing of
                    # the refused call was appended, so the retry renders the same log, smaller.
                    room = yield from self._make_room(overflow, user.seq)
                    if not room.fits and not room.changed:
                        return TurnEnded("error", final_text, calls, error=self._leave_out(user.seq, overflow, room))
                    try:
                        result = yield from self._call()
                    except ContextOverflow as again:
                        return TurnEnded("error", final_text, calls, error=self._leave_out(user.seq, again, room))
                estimate = self.memory.request_estimate(self.session) if self.memory else 0
                assistant, usage = self._record_call(result, estimate)
                if self.memory is not None:
                    self.memory.calibrate(estimate, usage)
                yield AssistantMessage(assistant, usage)
                if not self.model.on_anthropic and (line := abilities.from_answer(
                        self.session, result.content, (t.name for t in self.tools))) is not None:
                    yield Notice(line)
                final_text = "".join(b["text"] for b in result.content if b.get("type") == "text")
                tool_uses = [b for b in result.content if b.get("type") == "tool_use"]
                tasks = [b for b in tool_uses if b.get("name") == TASK] if self.subagents is not None else []
                if tasks:  # several at once: their sub-agents run side by side
                    yield from self._run_tasks(tasks)
                for block in tool_uses:
                    if block not in tasks:
                        yield from self._run_tool_call(block)
                if result.stop_reason != "tool_use" or not tool_uses:
                    stop = result.stop_reason
                    reason: StopReason = ("refusal" if stop == "refusal" else "max_tokens" if stop == "max_tokens"
                                          else "end_turn")
                    if stops < STOP_BLOCKS:
                        verdict = yield from self.run_hooks("stop", {"stop_reason": result.stop_reason,
                                                                  "last_message": final_text,
                                                                  "stop_hook_active": stops > 0})
                        if verdict.blocked:
                            stops += 1
                            continue  # its stderr is in the log, shown to the model next call
                    return TurnEnded(reason, final_text, calls)
        except ModelError as exc:
            self.session.append(ErrorEvent, kind="api", message=str(exc))
            return TurnEnded("error", final_text, calls, error=str(exc))
        except KeyboardInterrupt as stop:
            # Ctrl-C says nothing; a signal that ends scribe says which ("stopped by SIGTERM").
            dangling = unanswered_tool_uses(self.session.events)
            self.session.append(InterruptEvent, tool_use_ids=dangling, reason=str(stop) or "cancelled by the user")
            return TurnEnded("interrupted", final_text, calls)
        finally:
            self.session.sync()

    def _settle_ahead(self) -> Generator[AgentEvent, None, bool]:
        """Take what a compression between turns made, once it has ended. While it runs, a
        request that fits the window goes ahead without it (False: compress nothing now); one
        that would not fit waits for it."""
        ahead, memory = self.ahead, self.memory
        if ahead is None or memory is None:
            return True
        if not ahead.done:
            if memory.fits(self.session):
                return False
            yield from self._wait_for_ahead(memory.next_request(self.session))
        yield from self._take_ahead()
        return True

    def _wait_for_ahead(self, tokens: int, refused: bool = False) -> Generator[AgentEvent, None, None]:
        """Wait for the compression between turns to end, saying so (a cancel stops the wait)."""
        assert self.ahead is not None and self.memory is not None
        room = self.memory.limits(self.session).prompt
        if not self.ahead.done:
            yield CompressionWait(tokens, room if room is not None else tokens, refused)
        while not self.ahead.wait(WAIT_SLICE_S):
            stop_if_cancelled(self.cancelled)

    def _take_ahead(self) -> Iterator[AgentEvent]:
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            yield from ahead.take()

    def _compress(self) -> Generator[AgentEvent, None, None]:
        """What memory compresses before a call: now, or, where a person waits and the request
        fits the window anyway, in the background while the call goes ahead; headless, where it
        fits, nothing: it is compressed after the run (agent/finishing/), and a compression the
        window needs says what the call waits for, and for how long."""
        assert self.memory is not None
        started: float | None = None
        if self.compress_after:
            if self.memory.fits(self.session):
                return
            yield Notice("memory: this request does not fit the context window as it is; compressing first")
            started = time.monotonic()
        elif self.compress_off_path:
            if self.memory.fits(self.session):
                if self.memory.due(self.session):
                    yield from self.run_hooks("pre_compact", {"trigger": "auto", "custom_instructions": ""})
                    self.ahead = AheadCompression(self.memory, self.session, in_turn=True)
                return
            if self.memory.due(self.session):  # the person waits for it: say what for
                room = self.memory.limits(self.session).prompt
                tokens = self.memory.next_request(self.session)
                yield CompressionWait(tokens, room if room is not None else tokens, ahead=False)
        if self.hooks.for_event("pre_compact") and (started is not None or self.memory.due(self.session)):
            yield from self.run_hooks("pre_compact", {"trigger": "auto", "custom_instructions": ""})
        yield from self.memory.before_call(self.session)
        prompt = self.memory.limits(self.session).prompt
        turn = current_turn_start(self.session.events)
        if prompt is not None and turn is not None and not self.memory.fits(self.session):
            # What the thresholds compressed does not make the request fit (the retention floor
            # keeps a long last answer raw, say): as hard as needed now, by the server's count,
            # rather than after the server has refused the request.
            short = max(0, self.memory.next_request(self.session) - self.memory.context(self.session).total)
            yield from self.memory.shrink_to(self.session, prompt, keep_from=turn, short=short)
        if started is not None:
            yield Notice(f"memory: compressed in {time.monotonic() - started:.1f} s; the request goes ahead")

    def _call(self) -> Generator[AgentEvent, None, CallResult]:
        """One model call on the log as it stands, its text passed on as it arrives."""
        result = None
        for item in self.model.stream(render(self.session.events, self.session.chunks, self.session.images),
                                      self.cancelled):
            if isinstance(item, CallResult):
                result = item
            else:
                yield item
        assert result is not None
        return result

    def _make_room(self, overflow: ContextOverflow, turn_from: int) -> Generator[AgentEvent, None, Room]:
        """After a refusal for size: the compression running between turns, if any, is waited
        for and taken (it is what makes room), then everything before this turn is compressed as
        hard as needed, judged by the size the server counted. Whether the request may be sent
        again, and if not, why."""
        if self.memory is None:
            raise overflow
        estimate = self.memory.request_estimate(self.session)
        budget = self.memory.after_overflow(self.session, Overflow(overflow.requested, overflow.window), estimate)
        refused = self.memory.context(self.session).total
        short = max(0, overflow.requested - refused) if overflow.requested else 0  # what the estimate missed
        if self.ahead is not None:
            yield from self._wait_for_ahead(overflow.requested or refused, refused=True)
            yield from self._take_ahead()
        yield Notice(f"memory: the request did not fit the model's {overflow.window:,}-token context window; "
                     "compressing and trying once more")
        room = yield from self.memory.shrink_to(self.session, budget, keep_from=turn_from, short=short)
        return replace(room, changed=self.memory.context(self.session).total < refused)

    def _leave_out(self, turn_from: int, overflow: ContextOverflow, room: Room | None = None) -> str:
        """This turn does not fit: record that later requests leave it out, and why memory could
        not make room (`scribe log stats` says it), and say what to do."""
        window = overflow.window
        own = self.memory.own_size(self.session, turn_from) if self.memory is not None else overflow.requested or 0
        prompt = self.memory.limits(self.session).prompt if self.memory is not None else None
        if prompt is not None and own > prompt:
            line = (f"this message ({own:,} tokens with the instructions) does not fit the model's {window:,}-token "
                    "context window even with everything earlier compressed; shorten it or use a model with a "
                    "larger window")
        else:
            size = f" ({overflow.requested:,} tokens)" if overflow.requested else ""
            why = f" ({room.why})" if room is not None and room.why else ""
            line = (f"the request{size} does not fit the model's {window:,}-token context window, and memory "
                    f"could not compress the earlier part enough{why}; `scribe reflect` tries again, or use a "
                    "model with a larger window")
        last = self.session.events[-1].seq
        self.session.append(LeftOutEvent, seq_from=turn_from, seq_to=last, tokens=overflow.requested or own,
                            window=window, reason=line)
        return f"{line}; this turn is left out of later requests (the log keeps it)"

    def _outside_changes(self) -> Iterator[AgentEvent]:
        """Append what changed outside the agent's tools since the last call: a safe point, as
        every tool call so far has its result."""
        if self.watcher is None:
            return
        for change in self.watcher.drain(self.context.seen_hashes):
            event = self.session.append(FileChangeEvent, **change.fields())
            yield Notice(file_change_text(event))
        failure = self.watcher.take_failure()
        if failure is not None:
            self.session.append(ErrorEvent, kind="watcher", message=f"watching the workspace: {failure}")
            yield Notice(f"watcher: {failure}; some outside changes may go unreported")

    def _record_call(self, result: CallResult, estimate: int = 0) -> tuple[AssistantEvent, UsageEvent]:
        """The answer and its usage; with the request's own estimate (uncalibrated), which a
        reopened session calibrates from (log/digest.py)."""
        assistant = self.session.append(
            AssistantEvent, content=result.content, stop_reason=result.stop_reason,
            message_id=result.message_id, model=result.model,
        )
        usage = self.session.record_call(result, "agent", **({"estimate": estimate} if estimate > 0 else {}))
        return assistant, usage

    def _run_tool_call(self, block: dict[str, Any]) -> Generator[AgentEvent, ApprovalAnswer | None, None]:
        pending = yield from self._ask_call(block)
        if pending.denial is not None or pending.refusal is not None:
            out = ToolOutput(pending.denial or pending.refusal or "", is_error=True)
        else:
            with self._acting(pending.tool):
                self.context.output_tail = pending.call.output
                try:
                    out = run_tool(self.tools, pending.call.name, pending.call.args, self.context)
                except CommandInterrupted as stop:
                    # The call keeps its real, partial result; the turn then ends as cancelled.
                    self._append_result(pending, stop.output)
                    raise stop.cause from None
                finally:
                    self.context.output_tail = None
        yield from self._finish_call(pending, out)

    def _run_tasks(self, blocks: list[dict[str, Any]]) -> Generator[AgentEvent, ApprovalAnswer | None, None]:
        """The task calls of one answer: each asked about as any call is, then their sub-agents
        all at once (agent/task.py), then each result in the answer's order."""
        assert self.subagents is not None
        pending = []
        for block in blocks:
            pending.append((yield from self._ask_call(block)))
        allowed = [p for p in pending if p.denial is None and p.refusal is None]
        outputs: dict[str, ToolOutput] = {}
        if allowed:
            header = self.session.header
            parent = Parent(self.session.id, current_model(self.session.events, self.session.chunks), self.policy,
                            tuple(t.name for t in self.tools), {a.name: a for a in map(AgentSpec.of, header.agents)},
                            self.asks)
            with self._acting(allowed[0].tool):
                try:
                    outputs = yield from self.subagents.run(parent, [p.call for p in allowed])
                except TasksInterrupted as stop:
                    for p in pending:
                        self._append_result(p, stop.outputs.get(p.call.id) or ToolOutput(p.denial or p.refusal or "", is_error=True))
                    raise stop.cause from None
        for p in pending:
            out = outputs.get(p.call.id)
            if out is not None and out.child is not None:
                yield from self.run_hooks("subagent_stop", {"agent": out.child.get("agent"),
                                                            "agent_session_id": out.child.get("session"),
                                                            "reason": out.child.get("reason"), "tool_use_id": p.call.id},
                                          tool=str(out.child.get("agent")), tool_use_id=p.call.id)
            yield from self._finish_call(p, out or ToolOutput(p.denial or p.refusal or "", is_error=True))

    def _ask_call(self, block: dict[str, Any]) -> Generator[AgentEvent, ApprovalAnswer | None, _Pending]:
        """A call as it is asked for: shown, put to the pre_tool_use hooks, then to the rules and
        the mode (which may ask the person)."""
        name, args = block["name"], block.get("input") or {}
        tool = next((t for t in self.tools if t.name == name), None)
        tail = OutputTail(self.context.redact) if tool is not None and tool.kind == "command" else None
        call = ToolCall(block["id"], name, args, tool.summary(args) if tool else name, tail)
        yield call
        verdict = yield from self.run_hooks("pre_tool_use", {"tool_name": name, "tool_input": args,
                                                          "tool_use_id": call.id}, tool=name, tool_use_id=call.id)
        pending = _Pending(call, tool, time.monotonic(), dict(self.context.seen_hashes))
        if verdict.blocked:
            pending.denial = blocked_result(verdict.reason)
        elif tool is not None:
            pending.refusal = self._refusal(call, tool)
            if pending.refusal is None:
                pending.denial, pending.permission, pending.ruling = yield from self._denial(call, tool)
        pending.started = time.monotonic()
        return pending

    def _finish_call(self, pending: _Pending, out: ToolOutput) -> Generator[AgentEvent, ApprovalAnswer | None, None]:
        call = pending.call
        result = self._append_result(pending, out)
        yield ToolDone(call, result, denied=pending.denial is not None)
        if out.git_config:  # a command planted git configuration: the person's own git would read it
            self.session.append(GitConfigEvent, changes=out.git_config, tool_use_id=call.id)
            yield Notice(describe(out.git_config))
        if pending.denial is None and pending.refusal is None:
            response = {"output": result.output, "is_error": result.is_error, "exit_code": result.exit_code}
            yield from self.run_hooks("post_tool_use", {"tool_name": call.name, "tool_input": call.args,
                                                     "tool_use_id": call.id, "tool_response": response},
                                   tool=call.name, tool_use_id=call.id)

    def _append_result(self, pending: _Pending, out: ToolOutput) -> ToolResultEvent:
        """The call's result, with the file hashes it newly saw (rebuilt from the log on -c), how
        the permission mode decided it when it did not allow it outright, the permission rules
        that decided it, if any, and a task call's sub-agent."""
        call, permission, ruling = pending.call, pending.permission, pending.ruling
        seen = {path: digest for path, digest in self.context.seen_hashes.items()
                if pending.seen_before.get(path) != digest}
        return self.session.append(
            ToolResultEvent, tool_use_id=call.id, tool=call.name, output=out.text, is_error=out.is_error,
            exit_code=out.exit_code, duration_ms=int((time.monotonic() - pending.started) * 1000),
            dropped_bytes=out.dropped_bytes, seen=seen, blocks=out.blocks, attachments=out.attachments,
            # Only on a file tool's result, so every other line keeps its shape.
            **({"restore": out.restore} if out.restore is not None else {}),
            # Only when the person was asked or the mode refused (telemetry counts decisions).
            **({"permission": permission} if permission is not None else {}),
            # Only when a rule decided: which, and from where.
            **({"rules": ruling.recorded()} if ruling is not None and ruling.rules else {}),
            # Only on a task call's result: the sub-agent's session, kind and how it ended.
            **({"child": out.child} if out.child is not None else {}),
        )

    def hook_runner(self) -> HookRunner:
        return HookRunner(self.hooks, self.context.workspace, self._protection, self.context.redact,
                          cancelled=self.cancelled,
                          permission_mode=lambda: self.policy.mode,
                          git_watch=lambda: git_watch(self.context, self._protection()))

    def _protection(self) -> Protection:
        if self.context.protection is None:
            self.context.protection = command_protection(self.context.workspace.resolve(),
                                                         allowed_roots=self.context.allowed_roots)
        return self.context.protection

    def run_hooks(self, event: HookName, payload: dict[str, Any], *, tool: str | None = None,
               tool_use_id: str | None = None, log: bool = True) -> Generator[AgentEvent, None, HookVerdict]:
        """Run the hooks of `event` (none configured: nothing happens), logging each run unless
        `log` is False (the caller logs them where they belong); a failed hook is one notice."""
        if not self.hooks.for_event(event, tool):
            return HookVerdict()
        runner = self.hook_runner()
        with self._acting_hook():
            verdict = runner.run(self.session, event, payload, tool=tool, tool_use_id=tool_use_id)
        if log:
            runner.log(self.session, verdict)
        for line in verdict.notices:
            yield Notice(line)
        return verdict

    def _acting_hook(self) -> AbstractContextManager[None]:
        """What a hook changes in the workspace is scribe's doing (the person's formatter), not
        an outside change to report to the model."""
        return self.watcher.command_running() if self.watcher is not None else nullcontext()

    def _acting(self, tool: Tool | None) -> AbstractContextManager[None]:
        """What changes while the agent's own command (or MCP call) runs is its doing, not an
        outside change."""
        if self.watcher is not None and tool is not None and tool.kind in ("command", "mcp", "mcp-read", "task"):
            return self.watcher.command_running()
        return nullcontext()

    def _refusal(self, call: ToolCall, tool: Tool) -> str | None:
        """A call the mode would put to the person that the tool will refuse whatever the answer
        (a URL web_fetch never fetches) is not put: the tool's refusal is its result."""
        if self.policy.decide(tool.name, kind_of(tool, call.args), call.args).verdict != "ask":
            return None
        return refused_before(self.tools, call.name, call.args, self.context)

    def _denial(self, call: ToolCall,
                tool: Tool) -> Generator[AgentEvent, ApprovalAnswer | None, tuple[str | None, str | None, Ruling]]:
        """Why the call does not run (None: it runs), how it was decided when it was not
        allowed outright (the `permission` of its result: approved, approved_always, declined,
        denied), and the ruling, whose rules the result records. A question is yielded and its
        answer sent back; no answer declines."""
        kind = kind_of(tool, call.args)
        ruling = self.policy.decide(tool.name, kind, call.args)
        if ruling.verdict == "allow":
            return None, None, ruling
        if ruling.verdict == "ask" and self.asks:
            question = self.policy.question(ruling, tool.name, call.args)
            yield from self.run_hooks("notification", {"message": f"scribe needs your permission to use {tool.name}",
                                                       "kind": "approval", "tool_name": tool.name})
            answer = yield ApprovalRequested(call.id, call, self.policy.mode, question=question)
            decision = answer.decision if answer is not None else Decision.DECLINE
            if decision is Decision.STOP:
                # Not an answer: the person is saying something else. Nothing runs, and the turn
                # stops as a cancel stops it.
                raise KeyboardInterrupt("the user stopped the turn at a question")
            if decision is Decision.ALLOW_ALWAYS and answer is not None and answer.keep is not None:
                self.policy.keep(answer.keep)
                return None, "approved_always", Ruling("allow", answer.keep.rules)
            if decision is Decision.ALLOW_ALWAYS and ruling.rule is None:
                self.policy.always.add(tool.name)
                return None, "approved_always", ruling
            if decision in (Decision.ALLOW, Decision.ALLOW_ALWAYS):
                return None, "approved", ruling
            return self.policy.refusal(tool.name, kind, asked=True), "declined", ruling
        return self.policy.refusal_of(ruling, tool.name, kind, call.args, asked=False), "denied", ruling
