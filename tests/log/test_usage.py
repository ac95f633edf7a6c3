"""One value type of usage: the tokens a call was billed (log/usage.py: Tokens) are the same value
from the model client through the log, the figures and the REPL's bar to the session page, and
the per-call cache hit rate is computed in one place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import agent_on, events_of
from scribe.agent import driver
from scribe.agent.compression.compressor import ContextSize
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


# The keys a usage object may have in any JSON output, with what each means; docs/log-format.md
# ("Usage in JSON") says the same. Sums: summing per-call values gives the total.
USAGE_KEYS = {"input", "cache_read", "cache_write", "output", "prompt_tokens"}
# Names no output may use: they were once given other meanings ("input_tokens" meant the prompt).
RETIRED = {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"}


def _objects(value: object) -> list[dict]:  # type: ignore[type-arg]
    """Every JSON object inside `value`, at any depth."""
    if isinstance(value, dict):
        return [value, *(o for v in value.values() for o in _objects(v))]
    if isinstance(value, list):
        return [o for v in value for o in _objects(v)]
    return []


def _usage_objects(value: object) -> list[dict]:  # type: ignore[type-arg]
    return [o for o in _objects(value) if "cache_read" in o and "output" in o]


def test_every_json_output_spells_usage_the_same_way(workspace: Path, home: Path) -> None:
    """run -o json, stream-json, log list/show/stats --json and the index, for one session: each
    usage key means one thing everywhere, and the sums agree."""
    import sqlite3

    from helpers import run_scribe, scribe_env, session_logs

    # Above the first request's size, the cache minimum leaves that request uncached: every kind
    # of prompt token then occurs in the session.
    with FakeMessagesServer([Reply.text("one " * 800), Reply.text("two"), Reply.text("three " * 300)],
                            cache_min_tokens=2000) as server:
        env = scribe_env(server.base_url, home)
        summary = run_scribe(["run", "-o", "json", "first"], workspace, env)
        streamed = run_scribe(["run", "-c", "-o", "stream-json", "second"], workspace, env)
        last = run_scribe(["run", "-c", "-o", "json", "third"], workspace, env)
    assert summary.code == streamed.code == last.code == 0, (summary.err, streamed.err, last.err)
    billed = [Tokens(u["input_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"],
                     u["output_tokens"]) for u in (r.usage for r in server.requests)]
    total = sum(billed, Tokens())
    assert total.cache_read > 0 and total.input > 0 and total.cache_write > 0  # every kind occurs

    outputs = {
        "run -o json": [summary.json(), last.json()],
        "stream-json": [json.loads(line) for line in streamed.out.splitlines()],
        "log list": run_scribe(["log", "list", "--json"], workspace, env).json(),
        "log show": run_scribe(["log", "show", "--json"], workspace, env).json(),
        "log stats": run_scribe(["log", "stats", "--json"], workspace, env).json(),
    }
    for name, value in outputs.items():
        keys = {k for o in _objects(value) for k in o}
        assert not keys & RETIRED, (name, keys & RETIRED)
        found = _usage_objects(value)
        assert found, name
        for o in found:  # prompt_tokens, wherever given, is the three kinds of prompt token
            if "prompt_tokens" in o:
                assert o["prompt_tokens"] == o["input"] + o["cache_read"] + o["cache_write"], (name, o)

    def counts(o: dict) -> Tokens:  # type: ignore[type-arg]
        return Tokens(o["input"], o["cache_read"], o["cache_write"], o["output"])

    # per call: stream-json's answers, log show's usage events, log stats' calls, each the server's bill
    streamed_calls = [counts(o["message"]["usage"]) for o in outputs["stream-json"] if o["type"] == "assistant"]
    assert streamed_calls == [billed[1]]
    assert [counts(o) for o in outputs["log show"] if o["type"] == "usage"] == billed
    assert [counts(o) for o in outputs["log stats"]["per_call"]] == billed
    # sums: one run's, the session's in the list, in stats, and in the index
    assert counts(outputs["run -o json"][0]["usage"]) == billed[0]
    assert counts(outputs["run -o json"][1]["usage"]) == billed[2]
    [listed] = outputs["log list"]
    assert counts(listed) == counts(outputs["log stats"]["total"]) == total
    assert listed["prompt_tokens"] == total.prompt_tokens and listed["calls"] == 3
    [log] = session_logs(workspace)
    with sqlite3.connect(log.parent.parent / "index.sqlite3") as db:
        row = db.execute("SELECT sum(input), sum(cache_read), sum(cache_write), sum(output) FROM usage").fetchone()
    assert Tokens(*row) == total
