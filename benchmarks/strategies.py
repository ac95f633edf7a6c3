"""Memory strategies side by side on the same session shapes, in dollars.

scribe's rows are real runs of the `scribe` executable (chain.py), one process per turn, or, for
the long session, one in-process agent as the REPL keeps it (replay.py): every call they paid
for is billed, side calls included. Each "rule off" row is its own run with one setting
changed. The other rows rebuild, from the raw events of scribe's own run, the request each agent
call would have sent under that strategy, and send them in order to a fresh fake server that
validates and bills them: same turns, same tool outputs, the same output tokens per call, no
side calls (so no memory, no curation). They stop at the probe's first call: with the whole
history in view they would not need the recall calls scribe may make after it.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import anthropic

from scribe.context.render import CACHE, render
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.events import (
    AssistantEvent,
    Event,
    ObservationEvent,
    ReflectionEvent,
    UsageEvent,
    UserEvent,
)

from .bills import Bill, Call, Kept, bill_of, kept_facts, probe_request, purpose_of
from .chain import ChainRun, Executable, run_chain
from .replay import replay
from .sessions import ScriptedSession

Body = dict[str, Any]
Strategy = Callable[[list[Event]], Body]  # raw events before a call -> that call's request body

SHIPPED = "scribe as shipped"
IN_PROCESS = "scribe as shipped, in one process (REPL-like)"
FULL_CACHED = "full history, cached (no memory)"
NAIVE = "naive: full history, no caching, no memory"
FLOOR = "current turn only (the floor)"
# Each rule off in turn: the SCRIBE_* setting that turns it off.
RULES_OFF: dict[str, dict[str, str]] = {
    "scribe, payback rule off": {"SCRIBE_OBSERVE_ON_PAYBACK": "false"},
    "scribe, no reflection on payback": {"SCRIBE_REFLECT_ON_PAYBACK": "false"},
    "scribe, settled outputs not shortened": {"SCRIBE_SETTLED_OUTPUT_CHARS": "12000"},
    "scribe, no early compression on a cold cache": {"SCRIBE_COMPRESS_WHEN_COLD": "false"},
}
# Where a rule can do nothing its row is left out rather than run for an identical figure.
COLD_RULE = "scribe, no early compression on a cold cache"


@dataclass
class Row:
    strategy: str
    bill: Bill
    kept: Kept
    seconds: float = 0.0  # wall time of the run (scribe's rows)

    def as_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "usd": round(self.bill.usd, 6),
                "usd_by_purpose": {k: round(v, 6) for k, v in self.bill.usd_by_purpose.items()},
                "input_units": round(self.bill.input_units, 1), "hit_rate": round(self.bill.hit_rate, 4), "largest_prompt": self.bill.largest_prompt,
                "calls": {p: self.bill.count(p) for p in ("agent", "observer", "reflector", "curator")},
                "facts_kept": self.kept.count, "facts_in_prompt": self.kept.in_prompt,
                "facts_recalled": self.kept.recalled, "rejected": self.bill.rejected,
                "seconds": round(self.seconds, 1)}


@dataclass
class ScribeRun:
    requests: list[Any]
    events: list[Event]
    seconds: float


def _strip(body: Body) -> Body:
    def plain(block: Any) -> Any:
        return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block

    return {**body, "tools": [plain(t) for t in body.get("tools", [])], "system": [plain(b) for b in body["system"]],
            "messages": [{**m, "content": [plain(b) for b in m["content"]]} for m in body["messages"]]}


def full_no_cache(events: list[Event]) -> Body:
    return _strip(render(events).body())


def full_cached(events: list[Event]) -> Body:
    """The whole history with scribe's own breakpoints (instructions, the last two user turns)."""
    return render(events).body()


def current_turn_only(events: list[Event]) -> Body:
    """Instructions and the current turn alone, system and last message cached. Not a strategy
    anyone would ship: it is close to the least a session can be billed (every output is still
    written once and re-read within its turn), so the cost of memory is what is above it."""
    body = _strip(render(events).body())
    messages = body["messages"]
    starts = [i for i, m in enumerate(messages) if m["role"] == "user"
              and not any(b.get("type") == "tool_result" for b in m["content"])]
    body["messages"] = messages[starts[-1]:]
    body["system"][0] = {**body["system"][0], "cache_control": CACHE}
    last = body["messages"][-1]
    last["content"] = [*last["content"][:-1], {**last["content"][-1], "cache_control": CACHE}]
    return body


REBUILT: dict[str, Strategy] = {NAIVE: full_no_cache, FULL_CACHED: full_cached, FLOOR: current_turn_only}


def rebuild(name: str, build: Strategy, run: ScribeRun, session: ScriptedSession) -> Row:
    raw = [e for e in run.events if not isinstance(e, ObservationEvent | ReflectionEvent)]
    calls = [i for i, e in enumerate(raw) if isinstance(e, AssistantEvent)]
    outputs = [e.output for e in raw if isinstance(e, UsageEvent) and e.purpose == "agent"]
    bodies = [build(raw[:i]) for i in calls]
    probe = probe_request(bodies)
    bodies = bodies[: next(i for i, b in enumerate(bodies) if b is probe) + 1]
    # The person's time away ages this server's cache as it aged scribe's: before the first
    # call of a turn that came after a gap.
    turn_of = [sum(isinstance(e, UserEvent) for e in raw[:i]) - 1 for i in calls]
    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        client = anthropic.Anthropic(api_key="benchmark", base_url=server.base_url, max_retries=0)
        for n, body in enumerate(bodies):
            if n == 0 or turn_of[n] != turn_of[n - 1]:
                server.advance(session.turns[turn_of[n]].idle_before_s)
            client.messages.create(**{k: v for k, v in body.items() if k != "stream"})
        billed = bill_of(server.requests)
    bill = Bill([Call(c.purpose, c.model, c.usage, out) for c, out in zip(billed.calls, outputs, strict=False)],
                billed.rejected)
    return Row(name, bill, kept_facts(session.facts, probe))


def scribe_row(name: str, run: ScribeRun, session: ScriptedSession) -> Row:
    agent = [r.json for r in run.requests if r.usage and purpose_of(r.json) == "agent"]
    return Row(name, bill_of(run.requests), kept_facts(session.facts, probe_request(agent), run.events), run.seconds)


def _idle(session: ScriptedSession) -> bool:
    return any(t.idle_before_s for t in session.turns)


def compare_chain(session: ScriptedSession, current: Executable, settings_for: Callable[[dict[str, str]], Any],
                  before: Executable | None = None, workers: int = 2) -> list[Row]:
    """One shape: scribe as shipped through the executable (and `before`, today's code, beside
    it), each rule off in turn in-process, and the rebuilt baselines."""
    chains: dict[str, tuple[Executable, dict[str, str]]] = {SHIPPED: (current, {})}
    if before is not None:
        chains[before.label] = (before, {})
    if _idle(session):  # an in-process run cannot move the clock its log is stamped with
        chains |= {name: (current, env) for name, env in RULES_OFF.items()}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {name: pool.submit(run_chain, session, exe, env) for name, (exe, env) in chains.items()}
        in_process = None if _idle(session) else pool.submit(_rules_off, session, settings_for)
        runs: dict[str, ScribeRun] = {name: _of(f.result()) for name, f in futures.items()}
        if in_process is not None:
            runs |= in_process.result()
    return _rows(session, runs)


def compare_in_process(session: ScriptedSession, settings_for: Callable[[dict[str, str]], Any]) -> list[Row]:
    """The long shape: one agent for every turn, as the REPL keeps it."""
    shipped = replay(session, settings_for({}))
    return _rows(session, {SHIPPED: ScribeRun(shipped.requests, shipped.events, shipped.seconds),
                           **_rules_off(session, settings_for, with_shipped=False)})


def _of(run: ChainRun) -> ScribeRun:
    return ScribeRun(run.requests, run.events, run.seconds)


def _rules_off(session: ScriptedSession, settings_for: Callable[[dict[str, str]], Any], *,
               with_shipped: bool = True) -> dict[str, ScribeRun]:
    """In one process, as the REPL runs (notes curated once at the end): scribe as shipped, then
    with each rule off, so each rule's saving is read against the same mode of running."""
    variants = {**({IN_PROCESS: {}} if with_shipped else {}),
                **{n: e for n, e in RULES_OFF.items() if n != COLD_RULE or _idle(session)}}
    out = {}
    for name, env in variants.items():
        done = replay(session, settings_for(env))
        out[name] = ScribeRun(done.requests, done.events, done.seconds)
    return out


def _rows(session: ScriptedSession, runs: dict[str, ScribeRun]) -> list[Row]:
    rows = [scribe_row(name, run, session) for name, run in runs.items()]
    shipped = rows[0]
    rows.insert(1, Row("scribe, notes curation off (its run less the curator calls)", shipped.bill.without("curator"),
                       shipped.kept, shipped.seconds))
    rows += [rebuild(name, build, runs[SHIPPED], session) for name, build in REBUILT.items()]
    return rows
