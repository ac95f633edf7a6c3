"""Side-call inputs stay under `side_call_tokens` whatever the log's size and however many earlier
calls failed: on a 100,000-event log whose curations were all refused, `scribe run -c` (observer
and reflector) and the next new session (curator) send no request over the limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import session_header
from helpers import adopt, events_of, run_scribe, scribe_env
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel, side_call_kind
from scribe.log.events import (
    AssistantEvent,
    ErrorEvent,
    Event,
    NotesEvent,
    ObservationEvent,
    ReflectionEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import encode
from scribe.settings.files import ConfigError
from scribe.settings.values import Settings, load_settings
from scribe.tools.registry import builtin_tools, tool_definitions

LIMIT = 20_000
RAW_TAIL = 500  # events after the last observation: past observe_tokens, so `run -c` observes first


def long_log(workspace: Path, events: int) -> Path:
    """A session as a long life leaves it, written line by line as JSONL (the writer's fsyncs
    would take minutes): turns of a person's facts and short answers, an observation every 300
    events, a curation refused every 3,000 (before refusals recorded what they had read), and a
    raw tail long enough to be observed."""
    session_id = "20261130-000000-abcdef"
    path = workspace / ".scribe" / "sessions" / f"{session_id}.jsonl"
    path.parent.mkdir(parents=True)
    lines = [encode(session_header(ts="2026-11-30T00:00:00.000Z", id=session_id, created="2026-11-30T00:00:00.000Z",
                                   cwd=str(workspace), model="claude-sonnet-5-5", scribe_version="test",
                                   system="You are scribe, a coding agent.", tools=tool_definitions(builtin_tools()),
                                   prompt_hash="0", config=Settings().recorded()))]
    seq, turn, observed_to = 1, 0, 0

    def add(cls: type[Event], **fields: object) -> None:
        nonlocal seq
        lines.append(encode(cls(seq=seq, ts="2026-11-30T00:00:01.000Z", **fields)))  # type: ignore[arg-type]
        seq += 1

    while seq < events - RAW_TAIL:
        turn += 1
        if seq - observed_to >= 300:
            add(ObservationEvent, text=f"🔴 the person keeps value v{turn} at {turn * 7}\n🟡 " + "checked it " * 45,
                seq_from=observed_to + 1, seq_to=seq - 1, tokens=150, model="claude-haiku-5-5")
            observed_to = seq - 1
        if turn % 1000 == 0:
            add(ErrorEvent, kind="notes", message="notes curation refused: the curator's answer has no sourced entries")
        add(UserEvent, text=f"step {turn}: remember that value v{turn} is {turn * 7}")
        add(AssistantEvent, content=[{"type": "text", "text": f"Noted v{turn}."}], stop_reason="end_turn",
            message_id=f"msg_{turn}", model="claude-sonnet-5-5")
        add(UsageEvent, purpose="agent", model="claude-sonnet-5-5", input=10, cache_read=1000, cache_write=50,
            output=20)
    while seq < events:
        turn += 1
        add(UserEvent, text=f"step {turn}: the value v{turn} is {turn * 7}; " + "context " * 30)
        add(AssistantEvent, content=[{"type": "text", "text": f"Noted v{turn}; " + "acknowledged " * 15}],
            stop_reason="end_turn", message_id=f"msg_{turn}", model="claude-sonnet-5-5")
    path.write_bytes(b"".join(lines))
    adopt(path)  # written here, not by a scribe session: sealed as the person's
    return path


def billed(usage: dict[str, int] | None) -> int:
    usage = usage or {}
    return usage.get("input_tokens", 0) + usage.get("cache_read_input_tokens", 0) + usage.get(
        "cache_creation_input_tokens", 0)


@pytest.mark.slow
def test_no_side_call_over_the_limit_on_a_100k_event_log(workspace: Path, home: Path) -> None:
    path = long_log(workspace, 100_000)
    model = SideCallModel(lambda request: Reply.text("Done."))
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_CURATE_NOTES="true", SCRIBE_SIDE_CALL_TOKENS=str(LIMIT),
                         SCRIBE_WATCH_FILES="0")
        # it teaches something: the long session is compressed and curated after the run
        continued = run_scribe(["run", "-c", "what is v7? remember it"], workspace, env, timeout=180)
        assert continued.code == 0, continued.err
        fresh = run_scribe(["run", "a new task"], workspace, env, timeout=180)
        assert fresh.code == 0, fresh.err
    side = [(side_call_kind(r.json), billed(r.usage)) for r in server.requests if side_call_kind(r.json) != "agent"]
    assert {kind for kind, _ in side} == {"observer", "reflector", "curator"}
    assert all(r.status == 200 for r in server.requests)
    largest = max(tokens for _, tokens in side)
    assert largest <= LIMIT, side
    assert largest > LIMIT // 2  # each call took what fits, not a token-starved sliver
    events = events_of(path)
    assert any(isinstance(e, ObservationEvent) and e.seq > 99_000 for e in events)
    assert any(isinstance(e, ReflectionEvent) for e in events)
    curated = [e for e in events if isinstance(e, NotesEvent)]
    assert len(curated) == 1 and curated[0].extra["skipped"] > 30_000  # the oldest facts did not fit
    assert [u.purpose for u in events if isinstance(u, UsageEvent) and u.seq > 99_000].count("curator") == 1


def test_the_side_call_limit_is_a_setting_with_a_range(workspace: Path) -> None:
    assert Settings().side_call_tokens == 50_000
    assert load_settings(workspace, environ={"SCRIBE_SIDE_CALL_TOKENS": "12000"}).side_call_tokens == 12_000
    for wrong in ("100", "500000", "many"):
        with pytest.raises(ConfigError, match="side_call_tokens|expected int"):
            load_settings(workspace, environ={"SCRIBE_SIDE_CALL_TOKENS": wrong})
