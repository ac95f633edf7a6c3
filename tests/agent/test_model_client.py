"""The model client in process, through the real SDK against the fake API: what counts as a
complete answer for side calls too, the events a silent server produces, and how retried text
reaches both front ends (the REPL's view here; `scribe run` in test_broken_answers.py)."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import anthropic
import pytest
from rich.console import Console

from scribe.agent.protocol import AssistantMessage, Retrying, TextDelta, TextWithdrawn, TurnEnded, Waiting
from scribe.cli.repl.view import View
from scribe.context.render import Request
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, text_block
from scribe.log.events import AssistantEvent, UsageEvent
from scribe.model.client import CallResult, ModelClient
from scribe.model.errors import ModelError
from scribe.model.retry import RetryPolicy
from scribe.model.shown import ShownText
from scribe.settings.values import Settings

ANSWER = "The parser reads one line at a time and keeps the last good state."
REPLY = Reply([text_block(ANSWER)])
CUT = Fault(kind="cut", after_events=4, reply=REPLY)  # shows "The parser reads " first
REQUEST = Request.one_shot("claude-test", "You summarise.", "summarise this", 256)


@pytest.fixture
def client_for(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    def make(server: FakeMessagesServer, retries: int = 0, **options: float) -> ModelClient:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        return ModelClient(retry=RetryPolicy(retries, 0.01), **options)
    return make


def events_until_done(client: ModelClient) -> list[object]:
    """The call's events, with consecutive TextDeltas joined into one, and its error if any."""
    events: list[object] = []
    try:
        for event in client.stream(REQUEST):
            if isinstance(event, TextDelta) and events and isinstance(events[-1], TextDelta):
                events[-1] = TextDelta(events[-1].text + event.text)
            else:
                events.append(event)
    except ModelError as exc:
        events.append(exc)
    return events


# -- what is shown across retries (pure) ------------------------------------------------------


def test_a_retry_that_repeats_the_shown_text_sends_only_what_goes_past_it() -> None:
    shown = ShownText()
    assert shown.take("The parser ") == [TextDelta("The parser ")]
    assert shown.take("reads ") == [TextDelta("reads ")]
    shown.retry()
    assert shown.take("The par") == [] and shown.take("ser re") == []
    assert shown.take("ads one line") == [TextDelta("one line")]
    assert shown.take(" at a time") == [TextDelta(" at a time")]
    assert shown.finish() == []


def test_a_retry_that_diverges_withdraws_the_shown_text_and_starts_again() -> None:
    shown = ShownText()
    shown.take("The parser reads ")
    shown.retry()
    assert shown.take("The parser ") == []
    assert shown.take("was rewritten") == [TextWithdrawn("The parser reads "), TextDelta("The parser was rewritten")]
    assert shown.take(".") == [TextDelta(".")]


def test_a_retry_that_stops_short_of_the_shown_text_withdraws_it_at_the_end() -> None:
    shown = ShownText()
    shown.take("Done. And more")
    shown.retry()
    assert shown.take("Done.") == []
    assert shown.finish() == [TextWithdrawn("Done. And more"), TextDelta("Done.")]
    empty = ShownText()
    empty.take("partial")
    empty.retry()
    assert empty.finish() == [TextWithdrawn("partial")]


def test_a_second_retry_compares_with_all_that_was_shown() -> None:
    shown = ShownText()
    shown.take("one ")
    shown.retry()
    shown.take("one two ")  # the second try got further before it broke too
    shown.retry()
    assert shown.take("one two three") == [TextDelta("three")]


# -- side calls use the same rule --------------------------------------------------------------


@pytest.mark.parametrize("fault", [Fault(kind="no_stop", reply=REPLY), Fault(kind="null_stop", reply=REPLY),
                                   Fault(kind="short", after_events=4, reply=REPLY)],
                         ids=["no-message-stop", "null-stop-reason", "clean-close"])
def test_a_side_call_never_takes_an_incomplete_answer(client_for, fault: Fault) -> None:  # type: ignore[no-untyped-def]
    with FakeMessagesServer([fault, REPLY]) as server:
        with pytest.raises(ModelError, match="the answer was cut short"):
            client_for(server).complete(REQUEST)  # observer, reflector and curator call this
        result = client_for(server, retries=1).complete(REQUEST)
    assert result.content == [text_block(ANSWER)] and result.stop_reason == "end_turn"


# -- a silent server -------------------------------------------------------------------------


def test_a_silent_server_is_reported_at_once_then_times_out(client_for) -> None:  # type: ignore[no-untyped-def]
    with FakeMessagesServer([Fault(kind="hang")]) as server:
        events = events_until_done(client_for(server, slow_after_s=0.05, request_timeout_s=0.5))
        where = server.base_url.removeprefix("http://")
    waiting, failure = events
    assert waiting == Waiting(1, where, 0.05, 0.5, "connecting")
    assert waiting.reason == f"no answer yet from {where} after 0.05 s; giving up after 0.5 s of silence"
    assert str(failure) == f"model call failed: timed out after 0.5 s without a word from {where} (request_timeout_s sets this)"


def test_a_stream_that_stalls_mid_answer_is_reported_as_paused(client_for) -> None:  # type: ignore[no-untyped-def]
    with FakeMessagesServer([Fault(kind="stall", after_events=4, reply=REPLY), REPLY]) as server:
        events = events_until_done(client_for(server, retries=1, slow_after_s=0.05, request_timeout_s=0.5))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["TextDelta", "Waiting", "Retrying", "TextDelta", "CallResult"], events
    assert events[1].answering is True
    assert "timed out after 0.5 s" in events[2].reason
    assert events[0].text + events[3].text == ANSWER


def test_the_sdk_gets_a_read_timeout_and_a_short_connect_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    assert ModelClient.for_settings(Settings(request_timeout_s=42)).client.timeout == anthropic.Timeout(42, connect=10)
    assert ModelClient.for_settings(Settings(request_timeout_s=2)).client.timeout == anthropic.Timeout(2, connect=2)
    assert ModelClient.for_settings(Settings()).client.timeout.read == 120


# -- the REPL's view of a retried answer ---------------------------------------------------------


def shown_by_view(events: list[object], live: bool) -> tuple[str, str]:
    """What the view wrote, and the answer it held when the call completed: on a live terminal
    that is what it prints as markdown, once the transient live area is cleared."""
    out = io.StringIO()
    held = ""
    console = Console(file=out, width=100, height=30, no_color=True, force_terminal=live, force_interactive=live)
    view = View(console)
    for event in events:
        if isinstance(event, CallResult):
            held = view._text
            assistant = AssistantEvent(seq=2, ts="t", content=event.content, stop_reason=event.stop_reason)
            usage = UsageEvent(seq=3, ts="t", purpose="agent", model="m", input=1, cache_read=0, cache_write=0,
                               output=1)
            view.handle(AssistantMessage(assistant, usage))
        else:
            view.handle(event)  # type: ignore[arg-type]
    view.handle(TurnEnded("end_turn", "", 1))
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()), held


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_the_repl_shows_a_retried_answer_once(client_for, live: bool) -> None:  # type: ignore[no-untyped-def]
    with FakeMessagesServer([CUT, REPLY]) as server:
        events = events_until_done(client_for(server, retries=1))
    assert [type(e) for e in events] == [TextDelta, Retrying, TextDelta, CallResult]
    screen, held = shown_by_view(events, live)
    assert "retrying: connection lost" in screen
    if live:  # printed as markdown at the end, once the transient live area is gone: whole, once
        assert held == ANSWER
    else:  # plain: the first words, the retry line, then the rest, each once
        assert screen.count("The parser reads ") == 1 and "one line at a time" in screen
        assert screen.index("The parser reads ") < screen.index("retrying") < screen.index("one line at a time")


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_the_repl_drops_text_the_retry_withdrew(client_for, live: bool) -> None:  # type: ignore[no-untyped-def]
    other = "The parser was rewritten last week."
    with FakeMessagesServer([CUT, Reply.text(other)]) as server:
        events = events_until_done(client_for(server, retries=1))
    assert [type(e) for e in events] == [TextDelta, Retrying, TextWithdrawn, TextDelta, CallResult]
    screen, held = shown_by_view(events, live)
    assert "the retried answer differs from the text above" in screen
    assert held == other
    if not live:
        assert screen.count(other) == 1 and screen.index("The parser reads ") < screen.index("differs")


def test_no_new_module_loads_the_sdk_before_a_call(tmp_path: Path) -> None:
    """The client's new parts (attempt, answer, shown) keep the SDK's two-second import lazy."""
    import subprocess
    import sys

    code = ("import sys\nimport scribe.model.client, scribe.model.attempt, scribe.model.complete, scribe.model.shown\n"
            "print('anthropic' in sys.modules, 'httpx2' in sys.modules)\n")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert ran.stdout.split() == ["False", "False"], ran.stderr


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_the_repl_says_who_it_waits_for_when_the_server_goes_quiet(client_for, live: bool) -> None:  # type: ignore[no-untyped-def]
    with FakeMessagesServer([Fault(kind="hang")]) as server:
        events = events_until_done(client_for(server, slow_after_s=0.05, request_timeout_s=0.5))
        where = server.base_url.removeprefix("http://")
    waiting = [e for e in events if isinstance(e, Waiting)]
    out = io.StringIO()
    console = Console(file=out, width=200, height=30, no_color=True, force_terminal=live, force_interactive=live)
    view = View(console)
    view.handle(waiting[0])
    view.pause()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    if live:  # the spinner's label, drawn at least once before the live area is cleared
        assert f"no answer yet from {where}" in screen
    else:
        assert f"waiting: no answer yet from {where} after 0.05 s; giving up after 0.5 s of silence" in screen


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_a_server_reading_a_long_prompt_is_not_said_to_have_paused_its_answer(  # type: ignore[no-untyped-def]
        client_for, live: bool) -> None:
    """A local server sends its 200 at once and its first event only once it has evaluated the
    prompt: the wait says it is reading the prompt, with a spinner that counts the seconds from
    the start of the silence, never that an answer that has not begun has paused."""
    with FakeMessagesServer([Fault(kind="slow_start", hang_s=0.4, reply=REPLY)]) as server:
        events = events_until_done(client_for(server, slow_after_s=0.05, request_timeout_s=5))
        where = server.base_url.removeprefix("http://")
    [waiting] = [e for e in events if isinstance(e, Waiting)]
    assert waiting.stage == "reading" and not waiting.answering
    assert waiting.reason == f"{where} is reading the prompt before it answers after 0.05 s; giving up after 5 s of silence"
    assert isinstance(events[-1], CallResult) and events[-1].content == [text_block(ANSWER)]  # the answer, whole
    out = io.StringIO()
    view = View(Console(file=out, width=200, height=30, no_color=True, force_terminal=live, force_interactive=live))
    view.handle(waiting)
    time.sleep(0.3)  # the live area redraws itself
    view.pause()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert f"{where} is reading the prompt before it answers" in screen and "paused" not in screen
    if live:  # the spinner counts the seconds of the silence from its start (3 s here), not from its own
        view = View(Console(file=(out := io.StringIO()), width=200, height=30, no_color=True, force_terminal=True,
                            force_interactive=True))
        view.handle(Waiting(1, where, 3.0, 120, "reading"))
        time.sleep(0.3)
        view.pause()
        assert "(Esc or Ctrl-C cancels)  3 s" in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())


def test_a_pause_mid_answer_is_said_above_the_answer_and_keeps_it(client_for) -> None:  # type: ignore[no-untyped-def]
    with FakeMessagesServer([Fault(kind="stall", after_events=4, reply=REPLY), REPLY]) as server:
        events = events_until_done(client_for(server, retries=1, slow_after_s=0.05, request_timeout_s=0.5))
    screen, _ = shown_by_view(events, live=False)
    # the first words, the line saying the answer paused, then the rest: each once, in order
    assert screen.count("The parser reads ") == 1 and screen.count("one line at a time") == 1
    assert (screen.index("The parser reads ") < screen.index("waiting: the answer paused from")
            < screen.index("one line at a time"))


def _raised(exc: BaseException, cause: BaseException | None = None, *, implicit: bool = False) -> BaseException:
    """`exc` as the SDK would raise it: from `cause`, or while handling it (`implicit`)."""
    try:
        try:
            if cause is not None:
                raise cause
            raise exc
        except BaseException as inner:
            if inner is exc:
                raise
            if implicit:
                raise exc  # noqa: B904 - the implicit chain is the point
            raise exc from inner
    except BaseException as outer:  # noqa: BLE001 - returned for the test to examine
        return outer
    raise AssertionError("unreachable")


def _request() -> object:
    """A request as the SDK's exceptions carry it, from a real call to a port nobody listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = anthropic.Anthropic(api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(anthropic.APIConnectionError) as failed:
        client.messages.create(model="m", max_tokens=1, messages=[{"role": "user", "content": "hi"}])
    return failed.value.request


def test_failures_are_told_apart_by_the_public_classes_and_the_chain_only_refines_them() -> None:
    from scribe.model.connection import connect_timed_out, connection_refused, lost_words

    request = _request()
    bare = anthropic.APIConnectionError(request=request)  # type: ignore[arg-type]
    # no chain at all: a lost connection, in the SDK's own words, retried like any other
    assert not connection_refused(bare) and lost_words(bare) == "Connection error."
    # the socket's words where the SDK said no more; its own where it did
    assert lost_words(_raised(bare, OSError("peer closed the line"))) == "peer closed the line"
    said = anthropic.APIConnectionError(message="Connection to h failed: reset", request=request)  # type: ignore[arg-type]
    assert lost_words(_raised(said, OSError("reset"))) == "Connection to h failed: reset"
    # refused, however the SDK chained it (explicitly or while handling it, at any depth)
    refused = ConnectionRefusedError(111, "Connection refused")
    assert connection_refused(_raised(anthropic.APIConnectionError(request=request), refused))  # type: ignore[arg-type]
    assert connection_refused(_raised(anthropic.APIConnectionError(request=request),  # type: ignore[arg-type]
                                      _raised(RuntimeError("wrapped"), refused), implicit=True))

    class ConnectTimeout(Exception):  # the HTTP library's, whichever it is: matched by name, never imported
        pass

    timeout = anthropic.APITimeoutError(request)  # type: ignore[arg-type]
    assert connect_timed_out(_raised(timeout, ConnectTimeout()))
    assert not connect_timed_out(anthropic.APITimeoutError(request))  # type: ignore[arg-type]


def test_the_client_never_names_the_sdks_http_library() -> None:
    """Which HTTP library the SDK runs on is its own business: model/ and cli/ import only the
    SDK's public names (anthropic.Timeout, its exceptions), so a change of library cannot break them."""
    import ast

    root = Path(__file__).resolve().parents[2]
    found = []
    for path in [*(root / "model").rglob("*.py"), *(root / "cli").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(root)}: {n}" for n in names if n.split(".")[0].startswith("httpx")
                      or n.startswith("anthropic._")]
    assert found == []
