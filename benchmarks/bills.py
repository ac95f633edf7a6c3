"""What a run was billed, in dollars at each call's model's list price (log/pricing.py, the
table `scribe log stats` uses) and in input tokens, and which planted facts it kept."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scribe.fakeapi import RecordedRequest, side_call_kind
from scribe.log.events import AssistantEvent, Event, ToolResultEvent, UserEvent
from scribe.log.pricing import call_cost

from .sessions import PROBE, Fact

# Input "token units" as the earlier reports gave them (uncached 1x, cache writes 1.25x, reads
# 0.1x), kept beside the dollars so figures can be compared with those reports.
UNIT_WRITE, UNIT_READ = 1.25, 0.1
PURPOSES = ("agent", "observer", "reflector", "curator")


@dataclass(frozen=True)
class Call:
    purpose: str
    model: str
    usage: dict[str, Any]  # as the server returned it
    output: int  # output tokens billed

    @property
    def prompt(self) -> int:
        u = self.usage
        return u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]

    @property
    def usd(self) -> float:
        u = self.usage
        split = u.get("cache_creation") or {}
        one_hour = int(split.get("ephemeral_1h_input_tokens", 0))
        return call_cost(self.model, input=u["input_tokens"], cache_read=u["cache_read_input_tokens"],
                         cache_write=u["cache_creation_input_tokens"] - one_hour, cache_write_1h=one_hour,
                         output=self.output)

    @property
    def input_units(self) -> float:
        u = self.usage
        return u["input_tokens"] + UNIT_WRITE * u["cache_creation_input_tokens"] + UNIT_READ * u["cache_read_input_tokens"]

    @property
    def read(self) -> int:
        return int(self.usage["cache_read_input_tokens"])


@dataclass
class Bill:
    calls: list[Call]
    rejected: int = 0
    usd_by_purpose: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.usd_by_purpose = {p: sum(c.usd for c in self.calls if c.purpose == p) for p in PURPOSES}

    @property
    def usd(self) -> float:
        return sum(c.usd for c in self.calls)

    @property
    def input_units(self) -> float:
        return sum(c.input_units for c in self.calls)

    @property
    def largest_prompt(self) -> int:
        return max((c.prompt for c in self.calls if c.purpose == "agent"), default=0)

    @property
    def hit_rate(self) -> float:
        """The share of all prompt tokens read from the cache (what `scribe log stats` calls the hit rate)."""
        prompt = sum(c.prompt for c in self.calls)
        return sum(c.read for c in self.calls) / prompt if prompt else 0.0

    def count(self, purpose: str) -> int:
        return sum(1 for c in self.calls if c.purpose == purpose)

    def without(self, purpose: str) -> Bill:
        return Bill([c for c in self.calls if c.purpose != purpose], self.rejected)


def purpose_of(body: dict[str, Any]) -> str:
    """agent, observer, reflector or curator: by the side call's instructions, on either route."""
    return side_call_kind(body)


def bill_of(requests: Sequence[RecordedRequest]) -> Bill:
    calls = [Call(purpose_of(r.json), r.json.get("model", ""), r.usage, r.usage["output_tokens"])
             for r in requests if r.usage]
    return Bill(calls, sum(1 for r in requests if r.error or r.status != 200))


# -- facts ---------------------------------------------------------------------------------


def prompt_text(body: dict[str, Any]) -> str:
    """What a request shows the model, as text, up to (not including) the probe's question."""
    parts = [b.get("text", "") for b in body.get("system", []) if isinstance(b, dict)]
    for message in body["messages"]:
        for block in message["content"]:
            if block.get("type") == "text" and block.get("text") == PROBE:
                return "\n".join(parts)
            parts.append(block["text"] if block.get("type") == "text" else json.dumps(block, ensure_ascii=False))
    return "\n".join(parts)


def probe_request(bodies: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The first agent request of the probe turn: the final prompt the facts are judged on."""
    for body in bodies:
        last = body["messages"][-1]
        if last["role"] == "user" and any(b.get("text") == PROBE for b in last["content"] if b.get("type") == "text"):
            return body
    raise ValueError("no request asked the probe question")


@dataclass(frozen=True)
class Kept:
    in_prompt: list[str]  # fact kinds
    recalled: list[str]
    total: int

    @property
    def count(self) -> int:
        return len(self.in_prompt) + len(self.recalled)

    def cell(self) -> str:
        how = f" ({len(self.recalled)} by recall)" if self.recalled else ""
        lost = [k for k in ("path", "number", "decision", "constraint", "error")
                if k not in self.in_prompt + self.recalled]
        return f"{self.count}/{self.total}{how}" + (f", lost: {', '.join(lost)}" if lost and self.count else "")


def kept_facts(facts: Sequence[Fact], final_prompt: dict[str, Any], events: Sequence[Event] | None = None) -> Kept:
    """A fact is kept when the final prompt shows it, or (with `events`, scribe's own log) when
    the probe turn's recall calls returned it and the answer that closed the turn states it."""
    shown = prompt_text(final_prompt)
    in_prompt = [f.kind for f in facts if f.text in shown]
    recalled: list[str] = []
    if events is not None:
        start = max(i for i, e in enumerate(events) if isinstance(e, UserEvent) and e.text == PROBE)
        turn = events[start:]
        answers = "\n".join(e.output for e in turn if isinstance(e, ToolResultEvent) and e.tool == "recall")
        closing = next((e for e in reversed(turn) if isinstance(e, AssistantEvent)), None)
        said = "".join(b.get("text", "") for b in closing.content if b.get("type") == "text") if closing else ""
        recalled = [f.kind for f in facts if f.kind not in in_prompt and f.text in answers and f.text in said]
    return Kept(in_prompt, recalled, len(facts))
