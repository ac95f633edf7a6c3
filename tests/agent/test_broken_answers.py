"""Answers that break after a 200, and servers that hang, through the real `scribe` executable:
an answer counts only when the API says it is complete; anything else is retried whole, and
after the retries it is one line on stderr, exit 1, and a log that holds no partial answer.
Text already on stdout is never printed twice."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from helpers import events_of, run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, ErrorEvent, UsageEvent

ANSWER = "The parser reads one line at a time and keeps the last good state."
REPLY = Reply([text_block(ANSWER)])
# message_start, content_block_start, ping and the first delta ("The parser reads "), then the break.
FIRST_WORDS = "The parser reads "


def env_for(server: FakeMessagesServer, home: Path, retries: int = 1, **extra: str) -> dict[str, str]:
    return scribe_env(server.base_url, home, SCRIBE_MAX_RETRIES=str(retries), SCRIBE_RETRY_BACKOFF_S="0.01", **extra)


def last_line(err: str) -> str:
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1]


def assert_failed_cleanly(workspace: Path) -> None:
    """No answer was kept from the broken calls; the failure is recorded; the log verifies
    (the suite's own check)."""
    events = events_of(session_logs(workspace)[0])
    assert not any(isinstance(e, (AssistantEvent, UsageEvent)) for e in events)
    assert isinstance(events[-1], ErrorEvent) and events[-1].kind == "api"


# -- point 4: a stream is complete only when the API says so --------------------------------


@pytest.mark.parametrize(("fault", "reason"), [
    (Fault(kind="no_stop", reply=REPLY), "the answer was cut short (the stream ended without message_stop)"),
    (Fault(kind="null_stop", reply=REPLY), "the answer was cut short (no stop reason)"),
    (Fault(kind="short", after_events=4, reply=REPLY), "the answer was cut short (the stream ended without message_stop)"),
    (Fault(kind="short", after_events=1, reply=REPLY), "the answer was cut short (the stream ended without message_stop)"),
], ids=["no-message-stop", "null-stop-reason", "clean-close-after-text", "clean-close-before-text"])
def test_an_incomplete_stream_is_retried_and_then_one_line(workspace: Path, home: Path, fault: Fault,
                                                           reason: str) -> None:
    with FakeMessagesServer([fault, fault]) as server:
        ran = run_scribe(["run", "explain the parser"], workspace, env_for(server, home))
    assert ran.code == 1, ran.err
    assert last_line(ran.err) == f"scribe: model call failed after 2 tries: {reason}"
    assert f"retrying: {reason}; try 2 of 2" in ran.err
    assert len(server.requests) == 2
    assert_failed_cleanly(workspace)


def test_an_incomplete_stream_then_a_complete_one_gives_the_answer_once(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Fault(kind="no_stop", reply=REPLY), REPLY]) as server:
        ran = run_scribe(["run", "explain the parser"], workspace, env_for(server, home))
    assert ran.code == 0, ran.err
    assert len(server.requests) == 2 and "retrying: the answer was cut short" in ran.err
    assert ran.out == ANSWER + "\n"  # shown once, though both tries streamed all of it
    assistants = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, AssistantEvent)]
    assert [(a.stop_reason, a.content) for a in assistants] == [("end_turn", [text_block(ANSWER)])]


# -- point 6: unusual server answers are one line, never a traceback ------------------------

HTML = b"<!doctype html><html><head><title>Welcome</title></head><body><h1>It works!</h1></body></html>"
LATIN1 = "event: message_start\ndata: {\"type\": \"caf\xe9\"}\n\n".encode("latin-1")


@pytest.mark.parametrize(("fault", "tries", "reason"), [
    (Fault(kind="body", body=HTML, content_type="text/html; charset=utf-8"), 1,
     "the server answered with an HTML page, not a Messages API event stream "
     "(check ANTHROPIC_BASE_URL and any proxy in between)"),
    (Fault(kind="body", body=b'{"id": "msg_1", "type": "message"}', content_type="application/json"), 1,
     "the server answered with plain JSON, not a Messages API event stream "
     "(check ANTHROPIC_BASE_URL and any proxy in between)"),
    (Fault(kind="body", body=b""), 2, "the server's answer was empty (no message_start)"),
    (Fault(kind="body", body=LATIN1), 2, "the server sent bytes that are not UTF-8"),
    (Fault(kind="garble", after_events=4, reply=REPLY), 2,
     "the server sent an event that is not valid JSON (Unterminated string starting at)"),
    (Reply([tool_use_block("write_file", {"path": "a.txt", "content": "x\ud800"})]), 2,
     "the answer holds text that is not valid Unicode (a lone surrogate)"),
    (Reply([text_block("broken \udc00 text")]), 2,
     "the answer holds text that is not valid Unicode (a lone surrogate)"),
], ids=["html", "plain-json", "empty-sse", "not-utf8", "malformed-sse-line", "surrogate-in-tool-input",
        "surrogate-in-text"])
def test_an_unusual_answer_is_one_line(workspace: Path, home: Path, fault: Fault | Reply, tries: int,
                                       reason: str) -> None:
    """A web page or plain JSON will come back the same way: said at once. The rest may be
    corruption on the way and are tried again."""
    with FakeMessagesServer([fault, fault]) as server:
        ran = run_scribe(["run", "-p", "full-auto", "hi"], workspace, env_for(server, home))
    assert ran.code == 1, ran.err
    after = " after 2 tries" if tries == 2 else ""
    assert last_line(ran.err).startswith(f"scribe: model call failed{after}: {reason}"), ran.err
    assert len(server.requests) == tries
    assert server.errors == []
    assert not (workspace / "a.txt").exists()
    assert_failed_cleanly(workspace)


def test_an_error_event_mid_stream_is_retried(workspace: Path, home: Path) -> None:
    overloaded = b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    script = [Fault(kind="garble", after_events=4, reply=REPLY, garbage=overloaded), REPLY]
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", "hi"], workspace, env_for(server, home))
    assert ran.code == 0, ran.err
    assert "retrying: the server reported overloaded_error mid-answer; try 2 of 2" in ran.err
    assert ran.out == ANSWER + "\n"


# -- point 9: a retried stream does not duplicate text ---------------------------------------


@pytest.mark.parametrize("fault", [Fault(kind="cut", after_events=4, reply=REPLY),
                                   Fault(kind="short", after_events=4, reply=REPLY)], ids=["cut", "clean-close"])
def test_text_shown_before_a_retry_is_not_printed_again(workspace: Path, home: Path, fault: Fault) -> None:
    with FakeMessagesServer([fault, REPLY]) as server:
        ran = run_scribe(["run", "explain the parser"], workspace, env_for(server, home))
    assert ran.code == 0, ran.err
    assert ran.out == ANSWER + "\n"
    assert ran.err.count("retrying") == 1 and "differs" not in ran.err


def test_a_retried_answer_that_differs_starts_on_a_new_line_and_says_so(workspace: Path, home: Path) -> None:
    other = "The parser was rewritten last week; it now reads whole files."
    with FakeMessagesServer([Fault(kind="cut", after_events=4, reply=REPLY), Reply.text(other)]) as server:
        ran = run_scribe(["run", "explain the parser"], workspace, env_for(server, home))
    assert ran.code == 0, ran.err
    assert ran.out == f"{FIRST_WORDS}\n{other}\n"
    assert "the retried answer differs from the text above; it starts again below" in ran.err
    logged = [e.content for e in events_of(session_logs(workspace)[0]) if isinstance(e, AssistantEvent)]
    assert logged == [[text_block(other)]]


# -- point 15: a request timeout setting --------------------------------------------------


def test_a_hung_server_times_out_after_the_setting_and_says_so(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Fault(kind="hang"), Fault(kind="stall", after_events=4, reply=REPLY)]) as server:
        env = env_for(server, home, SCRIBE_REQUEST_TIMEOUT_S="0.5")
        ran = run_scribe(["run", "hi"], workspace, env, timeout=30)
        where = server.base_url.removeprefix("http://")
    assert ran.code == 1, ran.err
    reason = f"timed out after 0.5 s without a word from {where} (request_timeout_s sets this)"
    assert f"retrying: {reason}; try 2 of 2" in ran.err  # the hang, before any byte
    assert last_line(ran.err) == f"scribe: model call failed after 2 tries: {reason}"  # the stall, mid-answer
    assert ran.out == FIRST_WORDS  # what the stalled try showed, once
    assert "connection lost" not in ran.err
    assert_failed_cleanly(workspace)


def test_a_server_that_never_accepts_the_connection_is_a_connect_timeout(workspace: Path, home: Path) -> None:
    """A listening socket whose accept queue is full: the kernel drops the SYNs, as a firewall
    or an overloaded host would, and connecting hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:  # non-blocking: the ones past the queue wait in the kernel, not here
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        try:
            env = scribe_env(f"http://127.0.0.1:{port}", home, SCRIBE_MAX_RETRIES="0", SCRIBE_REQUEST_TIMEOUT_S="0.5")
            ran = run_scribe(["run", "hi"], workspace, env, timeout=30)
        finally:
            for filler in fillers:
                filler.close()
    assert ran.code == 1, ran.err
    assert last_line(ran.err) == f"scribe: model call failed: could not connect to 127.0.0.1:{port}: timed out after 0.5 s"
