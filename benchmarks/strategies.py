"""Memory strategies side by side, on the same turns.

scribe runs a scripted session for real (observer and reflector included). For every other
strategy, the request each agent call would have sent is rebuilt from that same raw log, and
sent in order to a fresh fake Messages server, which validates it and bills it against its
prompt cache. Same turns, same tool outputs; only the memory strategy differs.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import anthropic

from scribe.agent.config import Settings
from scribe.agent.pricing import CACHE_READ, CACHE_WRITE_5M, call_cost
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.memory.events import AssistantEvent, Event, ObservationEvent, ReflectionEvent
from scribe.memory.render import CACHE, render

from .replay import Replay, prompt_tokens, purpose_of, replay
from .sessions import ScriptedSession

Body = dict[str, Any]
Strategy = Callable[[list[Event]], Body]  # raw events before a call -> that call's request body

RETRIEVAL_K = 8


@dataclass
class StrategyResult:
    strategy: str
    billed_input: float  # token units: uncached 1x, cache writes 1.25x, reads 0.1x
    relative_cost: float  # billed_input / full history without caching
    # Input side at list prices of each call's model (observer and reflector on the cheaper one).
    # Output is left out: the rebuilt strategies' replies are placeholders, not the session's.
    input_usd: float
    cache_read_share: float
    largest_prompt: int
    facts_kept: int
    facts_total: int
    requests: int
    rejected: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def raw_events(events: list[Event]) -> list[Event]:
    return [e for e in events if not isinstance(e, ObservationEvent | ReflectionEvent)]


def _strip(body: Body) -> Body:
    """The same request without any cache_control."""
    def plain(block: Any) -> Any:
        return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block

    return {**body, "tools": [plain(t) for t in body.get("tools", [])], "system": [plain(b) for b in body["system"]],
            "messages": [{**m, "content": [plain(b) for b in m["content"]]} for m in body["messages"]]}


def _mark_last(body: Body, system_too: bool) -> Body:
    body = _strip(body)
    if system_too:
        body["system"][0] = {**body["system"][0], "cache_control": CACHE}
    last = body["messages"][-1]
    last["content"] = [*last["content"][:-1], {**last["content"][-1], "cache_control": CACHE}]
    return body


def full_no_cache(events: list[Event]) -> Body:
    return _strip(render(events).body())


def full_last_breakpoint(events: list[Event]) -> Body:
    return _mark_last(render(events).body(), system_too=False)


def rolling_window(budget: int) -> Strategy:
    """Full history, minus the oldest turns beyond `budget` tokens; system and last message cached."""
    def build(events: list[Event]) -> Body:
        body = render(events).body()
        messages = body["messages"]
        starts = [i for i, m in enumerate(messages) if m["role"] == "user"
                  and not any(b.get("type") == "tool_result" for b in m["content"])]
        for start in starts:
            if prompt_tokens({**body, "messages": messages[start:]}) <= budget or start == starts[-1]:
                body["messages"] = messages[start:]
                break
        return _mark_last(body, system_too=True)
    return build


_WORD = re.compile(r"[a-z0-9_]+")


def _vector(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(a[w] * b[w] for w in a.keys() & b.keys())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def retrieval(k: int = RETRIEVAL_K) -> Strategy:
    """The current turn's messages, plus the k earlier messages most similar to its prompt."""
    def build(events: list[Event]) -> Body:
        body = render(events).body()
        messages = body["messages"]
        starts = [i for i, m in enumerate(messages) if m["role"] == "user"
                  and not any(b.get("type") == "tool_result" for b in m["content"])]
        current = messages[starts[-1]:]
        earlier = messages[:starts[-1]]
        query = _vector(_text(current[0]))
        ranked = sorted(range(len(earlier)), key=lambda i: -_cosine(query, _vector(_text(earlier[i]))))[:k]
        recalled = "\n\n".join(f"[{earlier[i]['role']}] {_text(earlier[i])[:2000]}" for i in sorted(ranked))
        if recalled:
            first = current[0]
            note = {"type": "text", "text": f"Relevant earlier context:\n{recalled}"}
            current = [{**first, "content": [*first["content"], note]}, *current[1:]]
        body["messages"] = current
        return _mark_last(body, system_too=True)
    return build


def _text(message: dict[str, Any]) -> str:
    parts = []
    for block in message["content"]:
        if block.get("type") == "text":
            parts.append(block["text"])
        elif block.get("type") == "tool_result":
            parts.append(str(block.get("content", "")))
        elif block.get("type") == "tool_use":
            parts.append(f"{block['name']} {block.get('input')}")
    return "\n".join(parts)


def bill(bodies: list[Body]) -> list[dict[str, Any]]:
    """Send the requests in order to a fresh fake server; return what it billed for each."""
    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        client = anthropic.Anthropic(api_key="benchmark", base_url=server.base_url, max_retries=0)
        for body in bodies:
            client.messages.create(**{k: v for k, v in body.items() if k != "stream"})
        return [_billed(r) for r in server.requests]


def _billed(request: Any) -> dict[str, Any]:
    return {"usage": request.usage, "error": request.error, "status": request.status,
            "model": request.json.get("model", "")}


def _summary(name: str, billed: list[dict[str, Any]], baseline: float, final_prompt: str,
             facts: list[str], recallable: set[str]) -> StrategyResult:
    usages = [b["usage"] for b in billed if b["usage"]]
    cost = sum(u["input_tokens"] + CACHE_WRITE_5M * u["cache_creation_input_tokens"]
               + CACHE_READ * u["cache_read_input_tokens"] for u in usages)
    prompt = sum(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in usages)
    return StrategyResult(
        strategy=name,
        billed_input=round(cost, 1),
        relative_cost=cost / baseline if baseline else 0.0,
        input_usd=round(sum(call_cost(b["model"], input=b["usage"]["input_tokens"],
                                      cache_read=b["usage"]["cache_read_input_tokens"],
                                      cache_write=b["usage"]["cache_creation_input_tokens"],
                                      output=0) for b in billed if b["usage"]), 4),
        cache_read_share=sum(u["cache_read_input_tokens"] for u in usages) / prompt if prompt else 0.0,
        largest_prompt=max(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
                           for u in usages),
        facts_kept=sum(1 for f in facts if f in final_prompt or f in recallable),
        facts_total=len(facts),
        requests=len(billed),
        rejected=sum(1 for b in billed if b["error"] or b["status"] != 200),
    )


def _scribe(name: str, run: Replay, baseline: float, log_text: str) -> StrategyResult:
    last_agent_request = [r.json for r in run.requests if purpose_of(r) == "agent"][-1]
    facts = run.session.facts
    return _summary(name, [_billed(r) for r in run.requests], baseline, str(last_agent_request), facts,
                    {f for f in facts if f in log_text})


def compare(session: ScriptedSession, settings: Settings) -> list[StrategyResult]:
    run: Replay = replay(session, settings)
    raw = raw_events(run.events)
    calls = [i for i, e in enumerate(raw) if isinstance(e, AssistantEvent)]
    budget = settings.observe_tokens + settings.reflect_tokens
    others: dict[str, Strategy] = {
        "full history, no caching": full_no_cache,
        "full history, breakpoint on last message": full_last_breakpoint,
        f"rolling window ({budget // 1000}k tokens)": rolling_window(budget),
        f"retrieval (top {RETRIEVAL_K} similar messages)": retrieval(),
        # Not a strategy anyone would ship: the model sees only its current turn. Every output is
        # still written to the cache once and re-read within its turn, which any strategy pays, so
        # this is close to the least a session can be billed: the cost of memory is what is above it.
        "current turn only (no memory)": retrieval(k=0),
    }
    billed = {name: bill([build(raw[:i]) for i in calls]) for name, build in others.items()}
    baseline_usage = billed["full history, no caching"]
    baseline = sum(b["usage"]["input_tokens"] for b in baseline_usage)
    # What the last call of each strategy showed the model (plus, for scribe, its log via recall).
    log_text = "\n".join(str(e) for e in raw)
    results = [_scribe("scribe (observations, reflections, breakpoints)", run, baseline, log_text)]
    # The same, with compression decided by the threshold alone: what observing on payback buys.
    threshold_only = replay(session, dataclasses.replace(settings, observe_on_payback=False))
    results.append(_scribe("scribe, threshold only (`observe_on_payback = false`)", threshold_only, baseline, log_text))
    for name, build in others.items():
        final = str(build(raw[: calls[-1]]))
        results.append(_summary(name, billed[name], baseline, final, session.facts, set()))
    return results
