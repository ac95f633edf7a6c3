"""One value type of usage: the tokens a call was billed (log/usage.py: Tokens) are the same value
from the model client through the log, the figures and the REPL's bar to the session page, and
the per-call cache hit rate is computed in one place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import agent_on, events_of
from scribe.agent import driver
from scribe.agent.compress import ContextSize
from scribe.agent.protocol import AgentEvent, AssistantMessage
from scribe.cli.log.common import percent
from scribe.cli.log.page.document import session_page
from scribe.cli.repl.stats import numbers
from scribe.context.stats import session_stats
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.codec import to_record
from scribe.log.events import UsageEvent
from scribe.log.pricing import price_usage
from scribe.log.usage import Tokens
from scribe.settings.values import Settings


def test_a_call_s_tokens_are_one_value_from_the_client_to_the_page(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[AgentEvent] = []
    with FakeMessagesServer([Reply.text("one"), Reply.text("two " * 400)]) as server:
        agent = agent_on(server, workspace, Settings(permission_mode="full-auto", max_retries=0), monkeypatch)
        try:
            for prompt in ("first", "second"):
                driver.drive(agent.turn(prompt), shown.append)
        finally:
            agent.session.close()
        billed = [Tokens(u["input_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"],
                         u["output_tokens"]) for u in (r.usage for r in server.requests)]
    assert billed[1].cache_read > 0  # the second call read the first one's prefix from the cache

    events = events_of(agent.session.path)
    usage = [e for e in events if isinstance(e, UsageEvent)]
    assert [e.tokens for e in usage] == billed
    assert [e.usage.tokens for e in shown if isinstance(e, AssistantMessage)] == billed
    # the log line keeps its flat counts, as log/schema.json says
    assert [{k: to_record(e)[k] for k in ("input", "cache_read", "cache_write", "output")} for e in usage] == [
        t.counts() for t in billed]

    stats = session_stats(events, price_usage)
    assert [c.tokens for c in stats.calls] == billed
    assert stats.total.tokens == Tokens(*(sum(getattr(t, k) for t in billed) for k in ("input", "cache_read",
                                                                                       "cache_write", "output")))
    assert stats.total.hit_rate == stats.total.tokens.hit_rate == pytest.approx(
        sum(t.cache_read for t in billed) / sum(t.prompt_tokens for t in billed))

    bar = numbers(events, "ask", ContextSize(fixed=0, observations=0, raw=0))
    assert bar.last_hit == billed[-1].hit_rate == billed[-1].cache_read / billed[-1].prompt_tokens

    page = session_page(agent.session.id, events)
    for t in billed:
        assert f"{t.prompt_tokens:,} prompt tokens, {percent(t.hit_rate)} from the cache" in page
    data = json.loads(page.split('<script type="application/json" id="scribe-data">')[1].split("</script>")[0])
    assert [row[3:7] for row in data["calls"]] == [list(t.counts().values()) for t in billed]  # the chart's


def test_no_prompt_reads_nothing_from_the_cache() -> None:
    assert Tokens().prompt_tokens == 0 and Tokens().hit_rate == 0.0
    assert Tokens(input=10, cache_read=30, cache_write=60, output=5).hit_rate == 0.3
