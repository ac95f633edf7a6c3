"""Reopening from a checkpoint gives exactly what reading the whole log gives: the same request,
byte for byte, the same events wherever they are asked for, the same figures. A checkpoint that
no longer describes its log (stale, cut, garbage, another session's, or a log an older scribe
appended to) is rebuilt without a word."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from conftest import CORRUPT_ON_PURPOSE
from helpers import adopt
from scribe.agent.session.session import Session
from scribe.agent.session.start import open_session, start_session
from scribe.context.checkpoint import checkpoint_path, load_checkpoint, reopen
from scribe.context.render import canonical_json, render
from scribe.log.chunks import ChunkIndex, tail_after
from scribe.log.digest import LogDigest
from scribe.log.events import (
    EXTRACTIVE_MODEL,
    AssistantEvent,
    ErrorEvent,
    Event,
    FileChangeEvent,
    ModelSwitchEvent,
    ObservationEvent,
    ReflectionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import LogRead, LogWriter, read_line, read_log
from scribe.log.open_calls import unanswered_tool_uses
from scribe.log.store import describe
from scribe.log.whole_lines import WholeLines
from scribe.memory.extract import MODEL_REST, MODEL_TRIES, model_resting_now
from scribe.memory.observer import backoff_until
from scribe.settings.values import Settings
from scribe.tools.registry import builtin_tools, tool_definitions


def new_session(workspace: Path) -> Session:
    return start_session(workspace, Settings(), tool_definitions(builtin_tools()))


def reopened(path: Path) -> Session:
    return open_session(describe(path))


def add_turns(session: Session, rng: random.Random, turns: int) -> None:
    """Turns of the shapes a session has: words, tool calls and results, usage, observations of
    the older part, reflections of older chunks, model switches, outside changes."""
    for _ in range(turns):
        session.append(UserEvent, text=f"please do step {rng.randint(0, 999)}")
        for _ in range(rng.randint(0, 3)):
            call = f"t{session.writer.next_seq}"
            session.append(AssistantEvent, content=[{"type": "text", "text": "working"},
                                                    {"type": "tool_use", "id": call, "name": "read_file",
                                                     "input": {"path": f"f{rng.randint(0, 9)}.py"}}],
                           stop_reason="tool_use")
            session.append(UsageEvent, purpose="agent", model="claude-sonnet-5-5", input=rng.randint(1, 50),
                           cache_read=rng.randint(0, 5000), cache_write=rng.randint(0, 500), output=20)
            if rng.random() < 0.2:
                session.append(FileChangeEvent, path="outside.txt", kind="modified")
            session.append(ToolResultEvent, tool_use_id=call, tool="read_file",
                           output="line\n" * rng.randint(1, 4000), seen={f"f{rng.randint(0, 9)}.py": f"{rng.random()}"})
        session.append(AssistantEvent, content=[{"type": "text", "text": f"done {rng.random()}"}], stop_reason="end_turn")
        session.append(UsageEvent, purpose="agent", model="claude-sonnet-5-5", input=5, cache_read=100,
                       cache_write=10, output=30)
        if rng.random() < 0.15:
            session.append(ModelSwitchEvent, model=rng.choice(["claude-opus-5", "claude-sonnet-5-5"]))
        if rng.random() < 0.35:  # observe everything up to here but the last turn (a safe point)
            chunks, observed_to = session.chunks.update(session.events)
            users = [e.seq for e in session.events[session.events.start:] if isinstance(e, UserEvent)]
            upto = users[-1] - 1 if users else -1
            if upto > observed_to + 1:
                session.append(ObservationEvent, text=f"🔴 up to {upto}", seq_from=observed_to + 1, seq_to=upto,
                               tokens=5, model="claude-haiku-5-5")
                session.append(UsageEvent, purpose="observer", model="claude-haiku-5-5", input=900, cache_read=0,
                               cache_write=0, output=40)
        if rng.random() < 0.2:  # a memory step that failed and backs off
            session.append(ErrorEvent, kind=rng.choice(["reflect_backoff", "observe_backoff"]), message="refused",
                           until_tokens=rng.randint(1, 9999))
        chunks, _ = session.chunks.update(session.events)
        if len(chunks) >= 3 and rng.random() < 0.3:
            session.append(ReflectionEvent, text="🔴 condensed", supersedes=[c.seq for c in chunks[:2]], tokens=3,
                           model="claude-haiku-5-5")


def request_bytes(events: list[Event] | Session) -> str:
    if isinstance(events, Session):
        return canonical_json(render(events.events, events.chunks).body())
    return canonical_json(render(events).body())


def full_read(path: Path) -> list[Event]:
    return read_log(path).events


def assert_same_as_full_read(session: Session) -> None:
    events = full_read(session.path)
    assert request_bytes(session) == request_bytes(events)
    assert len(session.events) == len(events)
    assert list(session.events) == events  # forward: the older part streamed from the file
    assert list(reversed(session.events)) == events[::-1]  # backward: read back in batches
    picks = random.Random(len(events)).sample(range(len(events)), min(20, len(events)))
    assert [session.events[i] for i in picks] == [events[i] for i in picks]
    assert session.events[3:40] == events[3:40] and session.events[-5:] == events[-5:]
    fresh = LogDigest()
    for event in events:
        fresh.add(event)
    assert session.digest == fresh
    assert session.calls() == [e for e in events if isinstance(e, UsageEvent)]  # what the REPL's figures sum
    assert unanswered_tool_uses(session.events) == unanswered_tool_uses(events)
    for kind, cleared_by in (("reflect_backoff", ReflectionEvent), ("observe_backoff", ObservationEvent)):
        assert session.digest.backoff(kind, cleared_by) == backoff_until(events, kind, cleared_by)
    for seq in (0, 7, len(events) // 2, len(events) - 3):  # what follows any seq, not only the raw tail
        assert list(tail_after(session.events, seq)) == list(tail_after(events, seq))


@pytest.mark.parametrize("seed", range(12))
def test_a_checkpointed_reopen_renders_exactly_what_a_full_read_does(workspace: Path, seed: int) -> None:
    rng = random.Random(seed)
    session = new_session(workspace)
    path = session.path
    for _ in range(5):  # five processes, one after the other
        add_turns(session, rng, rng.randint(1, 12))
        expected = request_bytes(session)
        session.close()
        assert load_checkpoint(checkpoint_path(path)) is not None
        session = reopened(path)
        assert request_bytes(session) == expected
        assert_same_as_full_read(session)
    session.close()


def long_compressed_session(workspace: Path, turns: int = 120) -> Path:
    session = new_session(workspace)
    rng = random.Random(7)
    add_turns(session, rng, turns)
    chunks, observed_to = session.chunks.update(session.events)
    session.append(ObservationEvent, text="🔴 all of it", seq_from=observed_to + 1, seq_to=session.writer.next_seq - 1,
                   tokens=3, model="claude-haiku-5-5")
    session.append(UserEvent, text="and now?")
    session.close()
    return session.path


def test_only_the_raw_tail_is_parsed_on_reopen(workspace: Path) -> None:
    path = long_compressed_session(workspace)
    events = full_read(path)
    last_answer = max(i for i, e in enumerate(events) if isinstance(e, AssistantEvent))
    session = reopened(path)
    # Everything is observed but the question just asked: what is held is the last answer
    # (pairing reads it) and what follows it, out of more than a thousand events.
    assert len(events) > 1000 and session.events.start == last_answer
    assert_same_as_full_read(session)
    session.close()


def damage_checkpoint(path: Path, how: str, other: Path) -> None:
    checkpoint = checkpoint_path(path)
    if how == "garbage":
        checkpoint.write_bytes(b"\x00not json at all")
    elif how == "truncated":
        checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    elif how == "empty":
        checkpoint.write_bytes(b"")
    elif how == "foreign":  # another session's checkpoint copied over this one's
        shutil.copy(checkpoint_path(other), checkpoint)
    elif how == "wrong shape":
        state = json.loads(checkpoint.read_bytes())
        state["chunks"] = {"seen": "many"}
        checkpoint.write_text(json.dumps(state))
    elif how == "log rewritten":  # same size, one byte different
        data = bytearray(path.read_bytes())
        at = data.index(b"please do step")
        data[at:at + 6] = b"PLEASE"
        path.write_bytes(bytes(data))
    elif how == "log cut":  # an older copy of the log restored over it
        data = path.read_bytes()
        path.write_bytes(data[: data.rindex(b"\n", 0, len(data) // 2) + 1])
    elif how == "log replaced":
        shutil.copy(other, path)
    else:
        raise AssertionError(how)
    if how.startswith("log "):
        adopt(path)  # changed by hand: the person vouches for it, or scribe would not reopen it


@pytest.mark.parametrize("how", ["garbage", "truncated", "empty", "foreign", "wrong shape", "log rewritten",
                                 "log cut", "log replaced"])
def test_a_checkpoint_that_no_longer_describes_its_log_is_rebuilt(workspace: Path, how: str) -> None:
    path = long_compressed_session(workspace, turns=30)
    other = new_session(workspace)
    add_turns(other, random.Random(3), 10)
    other.close()
    damage_checkpoint(path, how, other.path)
    log = reopen(path)
    assert not log.from_checkpoint
    session = reopened(path)
    assert session.problems == []
    assert_same_as_full_read(session)
    session.close()
    assert reopen(path).from_checkpoint  # written anew


def test_lines_an_older_scribe_appended_after_the_checkpoint_are_read(workspace: Path) -> None:
    path = long_compressed_session(workspace, turns=40)
    cached = checkpoint_path(path).read_bytes()
    # An older scribe knows nothing of checkpoints: it reads the whole log and appends.
    with LogWriter.resume(path, read_log(path)) as older:
        older.append(AssistantEvent, content=[{"type": "tool_use", "id": "x1", "name": "read_file",
                                               "input": {"path": "a"}}], stop_reason="tool_use")
        older.append(ToolResultEvent, tool_use_id="x1", tool="read_file", output="a", seen={"a": "new"})
        older.append(ObservationEvent, text="🔴 later", seq_from=1, seq_to=older.next_seq - 1, tokens=2, model="m")
        older.append(UserEvent, text="after the older scribe")
    assert checkpoint_path(path).read_bytes() == cached
    log = reopen(path)
    assert log.from_checkpoint
    session = reopened(path)
    assert_same_as_full_read(session)
    assert session.digest.seen["a"] == "new"
    session.close()


def test_damaged_lines_and_a_torn_tail_read_the_same_through_a_checkpoint(workspace: Path) -> None:
    path = long_compressed_session(workspace, turns=30)
    (path.parent / CORRUPT_ON_PURPOSE).touch()
    session = reopened(path)
    session.close()
    with path.open("ab") as fh:  # a bad line, a blank line, then a writer killed mid-line
        fh.write(b'{"v":1,"seq":99999,"ts":"t","type":"user","text":5}\n\n{"v":1,"seq":')
    adopt(path)  # lines written by hand (the torn tail is not a line: it is cut off either way)
    first = reopened(path)  # cuts the torn tail; keeps the bad lines' problems in the checkpoint
    problems = list(first.problems)
    add_turns(first, random.Random(11), 3)
    first.close()
    second = reopened(path)
    assert [p for p in second.problems if "torn" not in p] == [p for p in problems if "torn" not in p]
    assert_same_as_full_read(second)
    second.close()


def test_a_chunk_index_survives_its_state(workspace: Path) -> None:
    path = long_compressed_session(workspace, turns=60)
    events = full_read(path)
    index = ChunkIndex()
    with path.open("rb") as fh:
        for offset, raw in WholeLines(fh):
            index.add(read_line(LogRead(), 0, raw), offset)
    state = index.to_state()
    assert state is not None and all(isinstance(c, list) for c in state["chunks"])  # places, not text

    def chunk_at(offset: int) -> Event | None:
        with path.open("rb") as fh:
            fh.seek(offset)
            return read_line(LogRead(), 0, fh.readline().rstrip(b"\n"))

    again = ChunkIndex.from_state(json.loads(json.dumps(state)), chunk_at)
    assert again.update(events) == index.update(events) and again.update(events)[0]
    assert (again.settled_before, again.model) == (index.settled_before, index.model)
    with pytest.raises(ValueError):  # a chunk no longer where the state says: the checkpoint is rebuilt
        ChunkIndex.from_state(state, lambda offset: chunk_at(0))
    assert ChunkIndex().update(events) and _unplaced(events).to_state() is None  # places not known: no state


def _unplaced(events: list[Event]) -> ChunkIndex:
    index = ChunkIndex()
    index.update(events)  # a list, not lines of a file
    return index


def test_a_reopen_without_a_checkpoint_counts_its_calls_and_lists_every_one(workspace: Path) -> None:
    path = long_compressed_session(workspace, turns=25)
    checkpoint_path(path).unlink()
    session = reopened(path)  # read whole: the calls are counted, their rows are not held
    calls = [e for e in full_read(path) if isinstance(e, UsageEvent)]
    assert len(calls) > 10 and session.digest.calls == len(calls)
    assert session.events.start > 0  # the older events stay in the file
    assert session.calls() == calls  # streamed from the file for the REPL's figures
    # Calls made after it join them; the REPL's list of every call has them all.
    session.append(UsageEvent, purpose="observer", model="claude-haiku-5-5", input=11, cache_read=0, cache_write=3,
                   output=5)
    every = [(e.purpose, e.input) for e in full_read(path) if isinstance(e, UsageEvent)]  # flushed as written
    assert [(u.purpose, u.input) for u in session.calls()] == every and every[-1] == ("observer", 11)
    session.close()
    again = reopened(path)
    assert again.digest.calls == len(every) and [(u.purpose, u.input) for u in again.calls()] == every
    again.close()


def test_the_digest_knows_how_many_agent_calls_read_each_chunk_without_reading_older_events(
        workspace: Path) -> None:
    path = long_compressed_session(workspace, turns=25)
    session = reopened(path)
    events = full_read(path)
    agent = [e.seq for e in events if isinstance(e, UsageEvent) and e.purpose == "agent"]
    held_from = session.events.start
    assert held_from > 0  # the older events are on disk, not in memory
    chunks, _ = session.chunks.update(session.events)
    digest = session.digest
    since = [digest.agent_calls - digest.agent_calls_before[c.seq] for c in chunks]
    assert len(chunks) >= 3 and since == [sum(s > c.seq for s in agent) for c in chunks] and any(since)
    assert set(digest.agent_calls_before) >= {c.seq for c in chunks}
    assert len(digest.agent_calls_before) <= len(chunks) + sum(isinstance(e, ReflectionEvent) for e in events)
    assert session.events.start == held_from  # and asking did not read them back
    session.close()


@pytest.mark.parametrize("seed", range(20))
def test_the_digest_s_state_says_the_same_after_any_mix_of_events_and_reloads(seed: int) -> None:
    """The digest is saved in the checkpoint and read back at each reopen: every reload must
    give the digest a full read gives."""
    rng = random.Random(seed)
    digest, fresh, seq, agent, made = LogDigest(), LogDigest(), 0, 0, []
    ts = "2026-01-05T09:00:00.000Z"
    for _ in range(80):
        seq += rng.randint(1, 3)
        step = rng.random()
        if step < 0.5:
            purpose = rng.choice(["agent", "observer", "agent", "curator"])
            event: Event = UsageEvent(seq, ts, purpose, "m", 1, 2, 3, 4, 5)
            agent += purpose == "agent"
        elif step < 0.65:
            event = ObservationEvent(seq, ts, text="o", seq_from=0, seq_to=0, tokens=1, model="m")
            made.append((seq, agent))
        elif step < 0.75 and len(made) >= 2:
            gone, made = made[:2], made[2:]
            event = ReflectionEvent(seq, ts, text="r", supersedes=[g for g, _ in gone], tokens=1, model="m")
            made.insert(0, (seq, agent))
        else:
            event = UserEvent(seq, ts, text="x")
        digest.add(event)
        fresh.add(event)
        if rng.random() < 0.2:
            digest = LogDigest.from_state(json.loads(json.dumps(digest.to_state())))
        assert digest == fresh
    assert digest.agent_calls == agent and digest.agent_calls_before == dict(made)
    state = digest.to_state()
    for broken in ("many", [["x", 1]], None):  # not a count, not seqs, missing
        with pytest.raises((TypeError, ValueError)):
            LogDigest.from_state(state | {"agent_calls": broken} if broken != [["x", 1]]
                                 else state | {"agent_calls_before": broken})


def _resting_read_backwards(events: list[Event], failed_kind: str, made: type[Event]) -> bool:
    """What model_resting_now must answer, read the long way: back through the log to the last
    `made` event a model wrote, counting the failures and the extractive ones since the last."""
    failures = stubs_since = 0
    for event in reversed(events):
        if isinstance(event, made):
            if getattr(event, "model", None) != EXTRACTIVE_MODEL:
                break
            if failures == 0:
                stubs_since += 1
        elif isinstance(event, ErrorEvent) and event.kind == failed_kind:
            failures += 1
            if failures >= MODEL_TRIES:
                break
    return failures >= MODEL_TRIES and stubs_since < MODEL_REST


@pytest.mark.parametrize("seed", range(30))
def test_whether_a_side_call_model_rests_is_known_from_the_digest_as_from_reading_back(seed: int) -> None:
    rng = random.Random(seed)
    events: list[Event] = []
    digest = LogDigest()
    ts = "2026-01-05T09:00:00.000Z"
    for seq in range(120):
        step = rng.random()
        model = rng.choice([EXTRACTIVE_MODEL, EXTRACTIVE_MODEL, "claude-haiku-4-5"])
        if step < 0.25:
            event: Event = ObservationEvent(seq, ts, text="o", seq_from=0, seq_to=0, tokens=1, model=model)
        elif step < 0.4:
            event = ReflectionEvent(seq, ts, text="r", supersedes=[], tokens=1, model=model)
        elif step < 0.7:
            event = ErrorEvent(seq, ts, kind=rng.choice(["observe_backoff", "reflect_backoff", "api"]), message="x")
        else:
            event = UserEvent(seq, ts, text="go on")
        events.append(event)
        digest.add(event)
        if rng.random() < 0.1:  # as a reopen from the checkpoint has it
            digest = LogDigest.from_state(json.loads(json.dumps(digest.to_state())))
        for kind, made in (("observe_backoff", ObservationEvent), ("reflect_backoff", ReflectionEvent)):
            assert model_resting_now(digest, kind, made) == _resting_read_backwards(events, kind, made)
