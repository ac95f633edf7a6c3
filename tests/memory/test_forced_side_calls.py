"""Side calls that never depend on the model's obedience, through the real SDK and the fake API:
a forced tool call answered with its schema's input is kept in the canonical text form (the same
bytes a text answer saying the same gives); a server that ignores tools answers text and the
text readers take it; a tool call with input that does not fit falls back to the text, and when
nothing usable is left (prose, refusal, malformed input) the oldest raw events become a
model-free summary that brings the prompt back under the threshold. The raw log is never touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import agent_on, events_of
from scribe.agent.curation.curator import curate
from scribe.agent.protocol import Compressed, TurnEnded
from scribe.agent.session.session import notes_path
from scribe.context.render import Request, render
from scribe.context.tokens import estimate_text
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel, tool_use_block
from scribe.log.events import (
    ErrorEvent,
    Event,
    NotesEvent,
    ObservationEvent,
    ReflectionEvent,
    ToolResultEvent,
    UserEvent,
)
from scribe.memory.answer_tools import OBSERVATIONS_TOOL, OBSERVATIONS_TOOL_NAME
from scribe.memory.extract import EXTRACTIVE_MODEL, STUB_TOKENS, extractive_stub
from scribe.model.client import ModelClient
from scribe.model.errors import ModelError
from scribe.settings.values import Settings

SETTINGS = Settings(permission_mode="full-auto", observe_tokens=800, reflect_tokens=500, observe_on_payback=False,
                    watch_files=False)


def prompt(k: int) -> str:
    return f"Turn {k}: keep the constant c{k} = {1000 + 37 * k} in src/const_{k}.py. " + " ".join(
        f"w{k}x{i}" for i in range(300))


def script(turns: int) -> list[Reply]:
    """Each turn runs one command (exit 3 on odd turns), then answers."""
    return [reply for k in range(turns) for reply in (
        Reply([tool_use_block("run_command", {"command": f"echo step {k}; exit {3 if k % 2 else 0}"})]),
        Reply.text(f"Noted c{k}."))]


def run_session(workspace: Path, monkeypatch: pytest.MonkeyPatch, turns: int = 4, *, settings: Settings = SETTINGS,
                **model: str) -> tuple[list[Event], FakeMessagesServer, list[Compressed]]:
    side = SideCallModel(script(turns), **model)  # type: ignore[arg-type]
    compressed: list[Compressed] = []
    with FakeMessagesServer(side) as server:
        agent = agent_on(server, workspace, settings, monkeypatch)
        for k in range(turns):
            happened = list(agent.turn(prompt(k)))
            assert [e for e in happened if isinstance(e, TurnEnded)][-1].reason == "end_turn"
            compressed += [e for e in happened if isinstance(e, Compressed)]
        agent.close()
        agent.session.close()
    assert server.errors == [] and all(r.error is None for r in server.requests)
    return events_of(agent.session.path), server, compressed


def observer_requests(server: FakeMessagesServer) -> list[dict]:
    return [r.json for r in server.requests if r.json["system"][0]["text"].startswith("You are the Observer")]


def observations(events: list[Event]) -> list[ObservationEvent]:
    return [e for e in events if isinstance(e, ObservationEvent)]


def test_a_forced_tool_answer_is_kept_in_the_canonical_text_form(workspace: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    events, server, _ = run_session(workspace, monkeypatch, tools="honour")
    asked = observer_requests(server)
    assert asked and all(r["tool_choice"] == {"type": "tool", "name": OBSERVATIONS_TOOL_NAME} for r in asked)
    assert all(r["tools"] == [OBSERVATIONS_TOOL] for r in asked)
    made = observations(events)
    assert made and all(o.extra["via"] == "tool" and o.model != EXTRACTIVE_MODEL for o in made)
    # The same session answered in canonical text: the log keeps the very same observation bytes.
    other = tmp_path / "text"
    other.mkdir()
    (other / ".git").mkdir()
    text_events, _, _ = run_session(other, monkeypatch, tools="ignore", habit="canonical")
    assert [o.text for o in made] == [o.text for o in observations(text_events)]
    assert all(o.extra["via"] == "text" for o in observations(text_events))


def test_a_text_answer_is_still_read_when_the_server_ignores_tools(workspace: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    events, server, _ = run_session(workspace, monkeypatch, tools="ignore", habit="bulleted")
    assert all("tool_choice" in r for r in observer_requests(server))  # asked for, and ignored
    made = observations(events)
    assert made and all(o.extra["via"] == "text" and o.text.startswith("🔴 User asked") for o in made)
    assert not any(isinstance(e, ErrorEvent) for e in events)


def test_unusable_tool_input_falls_back_to_the_model_free_summary(workspace: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    events, _, compressed = run_session(workspace, monkeypatch, tools="malformed")
    refused = [e.message for e in events if isinstance(e, ErrorEvent) and e.kind == "observe_backoff"]
    assert refused and all(f"the {OBSERVATIONS_TOOL_NAME} input has no list of observations" in m for m in refused)
    made = observations(events)
    assert made and all(o.model == EXTRACTIVE_MODEL for o in made)
    assert compressed and all(c.model_free for c in compressed if c.kind == "observation")


@pytest.mark.parametrize("habit", ["prose", "refusal"])
def test_a_prose_answer_leads_to_a_model_free_summary_and_the_prompt_back_under_the_threshold(
        habit: str, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    side = SideCallModel(script(4), habit=habit)
    with FakeMessagesServer(side) as server:
        agent = agent_on(server, workspace, SETTINGS, monkeypatch)
        assert agent.memory is not None
        for k in range(4):
            list(agent.turn(prompt(k)))
            # Before each next call the raw tail is back under the threshold, so it never grows.
            assert agent.memory.context(agent.session).raw <= SETTINGS.observe_tokens + 600  # + one new turn
        size = agent.memory.context(agent.session)
        request = render(agent.session.events, agent.session.chunks)
        agent.close()
        agent.session.close()
    events = events_of(agent.session.path)
    stubs = observations(events)
    assert stubs and all(s.model == EXTRACTIVE_MODEL and s.extra["via"] == "extractive" for s in stubs)
    first = stubs[0]
    covered = [e for e in events if first.seq_from <= e.seq <= first.seq_to]
    # The person's words (clipped), the command with its exit code, and the way back to the events.
    assert "🔴 User (seq 1): Turn 0: keep the constant c0 = 1000 in src/const_0.py." in first.text
    assert "🟡 Ran (seq 4): echo step 0; exit 0 -> exit 0" in first.text
    assert f"recall seq {first.seq_from}-{first.seq_to}" in first.text
    assert any(isinstance(e, ToolResultEvent) for e in covered)  # the raw log still holds them all
    assert all(s.tokens <= STUB_TOKENS for s in stubs)
    assert size.raw < SETTINGS.observe_tokens
    # Rendered as the chunk it is (or as the model-free condensation that took its place).
    assert any("\n🟢 Model-free" in b["text"] for b in request.system[1:])
    for stub in stubs:  # each is smaller than the person's words alone in what it covers
        said = [e for e in events if isinstance(e, UserEvent) and stub.seq_from <= e.seq <= stub.seq_to]
        assert said and stub.tokens < sum(estimate_text(e.text) for e in said)


def test_a_resting_observer_is_not_asked_at_every_turn(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events, server, _ = run_session(workspace, monkeypatch, turns=9, habit="prose")
    refused = [e for e in events if isinstance(e, ErrorEvent) and e.kind == "observe_backoff"]
    stubs = observations(events)
    assert len(observer_requests(server)) == len(refused) < len(stubs)  # some summaries asked no model
    assert len(refused) >= 2


def test_the_model_free_compression_asks_no_model(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    side = SideCallModel(script(3))
    settings = Settings(permission_mode="full-auto", observe_tokens=30_000, watch_files=False)
    with FakeMessagesServer(side) as server:
        agent = agent_on(server, workspace, settings, monkeypatch)
        assert agent.memory is not None
        for k in range(3):
            list(agent.turn(prompt(k)))
        before, calls = agent.memory.context(agent.session), len(server.requests)
        made = [e for e in agent.memory.compress_model_free(agent.session) if isinstance(e, Compressed)]
        after = agent.memory.context(agent.session)
        assert len(server.requests) == calls  # no side call
        agent.close()
        agent.session.close()
    stub = observations(events_of(agent.session.path))[-1]
    assert made and made[0].model_free and stub.model == EXTRACTIVE_MODEL
    last_user = max(e.seq for e in agent.session.events if isinstance(e, UserEvent))
    assert stub.seq_to < last_user  # the current turn's message stays raw
    assert after.total < before.total


def test_a_forced_reflection_and_curation_come_back_as_their_text_forms(workspace: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    side = SideCallModel(script(5), tools="honour")
    with FakeMessagesServer(side) as server:
        agent = agent_on(server, workspace, SETTINGS, monkeypatch)
        assert agent.memory is not None
        for k in range(5):
            list(agent.turn(prompt(k)))
        list(agent.memory.reflect(agent.session, force=True))
        curation = curate(agent.session, agent.model, SETTINGS, notes_path(workspace))
        agent.close()
        agent.session.close()
    events = events_of(agent.session.path)
    reflections = [e for e in events if isinstance(e, ReflectionEvent)]
    notes = [e for e in events if isinstance(e, NotesEvent)]
    assert reflections and all(r.extra["via"] == "tool" for r in reflections)
    assert curation.written and notes[0].extra["via"] == "tool"
    assert notes_path(workspace).read_text(encoding="utf-8") == notes[0].text
    assert all(line.endswith("]") for line in notes[0].text.splitlines() if line.startswith("- "))  # sources kept


def test_model_free_condensation_when_the_reflector_cannot_answer(workspace: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    events, _, compressed = run_session(workspace, monkeypatch, turns=8, observer="canonical", reflector="prose")
    condensed = [e for e in events if isinstance(e, ReflectionEvent)]
    assert condensed and all(r.model == EXTRACTIVE_MODEL for r in condensed)
    assert any(c.kind == "reflection" and c.model_free and c.tokens_after < c.tokens_before for c in compressed)
    assert "🔴 User asked" in condensed[0].text and "recall seq" in condensed[0].text


def test_the_fake_api_checks_tool_choice_like_the_real_one(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeMessagesServer([Reply.text("unused")]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        client = ModelClient()
        good = Request.one_shot("claude-test", "You summarise.", "x", 64, tool=OBSERVATIONS_TOOL)
        for wrong, message in ((good.tool_choice | {"name": "other"}, "Tool 'other' not found in tools"),
                               ({"type": "sometimes"}, "does not match any of the expected tags")):
            with pytest.raises(ModelError, match=message):
                client.complete(Request(good.model, 64, good.tools, good.system, good.messages, tool_choice=wrong))
        with pytest.raises(ModelError, match="only be specified while providing tools"):
            client.complete(Request(good.model, 64, [], good.system, good.messages, tool_choice=good.tool_choice))
        assert client.complete(good).content == [{"type": "text", "text": "unused"}]


def test_the_stub_is_bounded_whatever_the_span() -> None:
    events = [UserEvent(seq=n, ts="t", text=f"message {n}: " + "word " * 2000) for n in range(1, 200)]
    span_tokens = sum(estimate_text(e.text) for e in events)
    stub = extractive_stub(events, span_tokens)
    assert estimate_text(stub) <= STUB_TOKENS
    assert "recall seq 1-199" in stub and "more facts left out" in stub
    small = extractive_stub(events[:1], 180)
    assert estimate_text(small) <= 90  # never more than half of what it replaces
