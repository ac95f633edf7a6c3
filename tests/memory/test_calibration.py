"""A continued session's token estimates start where the process that made its calls left them:
each agent call's usage line keeps the request's own estimate, the digest keeps the latest of
them (in the checkpoint too), and the reopened session's estimator learns from them before its
first decision (a `scribe run -c` is a new process every time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import agent_for, events_of, session_logs
from scribe.agent.config import SessionChoice
from scribe.agent.protocol import TurnEnded
from scribe.context.checkpoint import checkpoint_path
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.digest import CALIBRATION_CALLS, LogDigest
from scribe.log.events import UsageEvent
from scribe.settings.values import Settings

SETTINGS = Settings(permission_mode="full-auto", watch_files=False, curate_notes=False, observe_on_payback=False)


def _turn(agent, prompt: str) -> None:  # type: ignore[no-untyped-def]
    ended = [e for e in agent.turn(prompt) if isinstance(e, TurnEnded)]
    assert ended and ended[-1].reason == "end_turn", ended


def test_a_continued_session_starts_calibrated_as_its_last_process_left_it(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeMessagesServer(lambda request: Reply.text("Noted.")) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        agent = agent_for(workspace, SETTINGS)
        for k in range(3):
            _turn(agent, f"note {k}: " + "the quick brown fox jumps over the lazy dog; " * 40)
        learnt = agent.memory.estimator.factor
        agent.close()
        agent.session.close()
        assert learnt != 1.0  # the fake API counts otherwise than scribe estimates

        usages = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, UsageEvent)]
        assert [type(u.extra.get("estimate")) for u in usages] == [int, int, int]

        # From the checkpoint the closing session left, then from the whole log without it.
        for _ in range(2):
            again = agent_for(workspace, SETTINGS, choice=SessionChoice(continue_latest=True))
            assert again.memory is not None
            assert again.memory.estimator.factor == pytest.approx(learnt)
            again.close()
            again.session.close()
            checkpoint_path(again.session.path).unlink()


def test_the_digest_keeps_the_latest_calls_and_reads_a_checkpoint_from_before_them() -> None:
    digest = LogDigest()
    for k in range(CALIBRATION_CALLS + 3):
        digest.add(UsageEvent(seq=k + 1, ts="2026-12-03T00:00:00Z", purpose="agent", model="m", input=50 + k,
                              cache_read=0, cache_write=0, output=1, extra={"estimate": 100}))
    digest.add(UsageEvent(seq=99, ts="2026-12-03T00:00:00Z", purpose="observer", model="m", input=7,
                          cache_read=0, cache_write=0, output=1, extra={"estimate": 100}))
    assert digest.calibration == [[100, 50 + k] for k in range(3, CALIBRATION_CALLS + 3)]
    state = digest.to_state()
    assert LogDigest.from_state(state).calibration == digest.calibration
    del state["calibration"]  # a checkpoint an older scribe wrote
    assert LogDigest.from_state(state).calibration == []
