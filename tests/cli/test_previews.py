"""A long command output enters the prompt as a preview, and the model reads on with recall:
`scribe run` end to end against the fake Messages API, whose model answers from what it was
sent, as a model would."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from helpers import events_of, run_scribe, scribe_env, session_logs
from scribe.context.render import Request, canonical_json, prefix_blocks, render
from scribe.fakeapi import FakeMessagesServer, Reply, ScriptItem, text_block, tool_use_block
from scribe.log.events import AssistantEvent, SessionEvent, ToolResultEvent

COMMAND = "python3 -c \"for k in range(1, 4001): print(f'row {k}: value {k * 7}')\""
ROWS = [f"row {k}: value {k * 7}" for k in range(1, 4001)]
ASKED = "What is the value on row 1234 of the table the loader prints?"
WANTED = "row 1234: value 8638"


def as_request(body: dict[str, Any]) -> Request:
    return Request(body["model"], body["max_tokens"], body["tools"], body["system"], body["messages"])


def results(request: dict[str, Any]) -> list[str]:
    """The text of the tool results in the request's last message."""
    return [b["content"] if isinstance(b["content"], str) else b["content"][0]["text"]
            for b in request["messages"][-1]["content"] if b.get("type") == "tool_result"]


class ReadsOn:
    """Runs the command; finds no row 1234 in what came back, so reads on from the seq its
    preview names, by line range and by pattern; answers with what the recall answers say."""

    def __call__(self, request: dict[str, Any]) -> ScriptItem:
        got = results(request)
        if not got:
            return Reply([text_block("Let me print it."), tool_use_block("run_command", {"command": COMMAND})])
        if len(got) == 1 and WANTED not in got[0]:
            seq = int(re.search(r'recall \{"seq": (\d+), "lines"', got[0]).group(1))  # type: ignore[union-attr]
            return Reply([tool_use_block("recall", {"seq": seq, "lines": "1230-1238"}),
                          tool_use_block("recall", {"seq": seq, "query": "^row 1234:"})])
        found = [WANTED in answer for answer in got]
        return Reply.text(f"Row 1234 reads `{WANTED}` (by range: {found[0]}, by pattern: {found[1]}).")


def test_the_answer_on_line_1234_of_4000_comes_from_recall_not_from_the_preview(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(ReadsOn()) as server:
        env = scribe_env(server.base_url, home)
        ran = run_scribe(["run", "-p", "full-auto", ASKED], workspace, env)
        requests = [r.json for r in server.requests]
    assert ran.code == 0, ran.err
    assert f"Row 1234 reads `{WANTED}` (by range: True, by pattern: True)." in ran.out
    events = events_of(session_logs(workspace)[0])
    output = next(e for e in events if isinstance(e, ToolResultEvent) and e.tool == "run_command")
    assert output.output.splitlines() == ROWS  # the log keeps it whole
    seq = output.seq

    # The second call was sent the preview: the head and tail of the output, its size, its seq,
    # how to read on; no row 1234.
    [preview] = results(requests[1])
    lines = preview.splitlines()
    head = lines.index(next(line for line in lines if line.startswith("[… lines ")))
    assert lines[0].startswith(f"[run_command output: 4,000 lines, {len(output.output):,} characters; shown here: "
                               f"lines 1-{head - 1} and ")
    assert f'The whole output is event {seq} of this session\'s log: recall {{"seq": {seq}, "lines": "{head}-' \
           in lines[0]
    assert lines[1:head] == ROWS[:head - 1] and lines[head + 1:] == ROWS[-(len(lines) - head - 1):]
    assert WANTED not in preview and len(preview) < 2_500

    # The third was sent exactly that preview again (the second's prompt is its cached prefix)
    # and the two recall answers.
    before, after = prefix_blocks(as_request(requests[1])), prefix_blocks(as_request(requests[2]))
    assert after[:len(before)] == before
    by_range, by_pattern = results(requests[2])
    assert by_range == (f"[seq {seq}] tool_result of run_command (ok), lines 1,230-1,238 of 4,000:\n"
                        + "\n".join(f"{n:>6}\t{ROWS[n - 1]}" for n in range(1230, 1239)))
    assert by_pattern == (f"[seq {seq}] tool_result of run_command (ok): 1 of its 4,000 lines matches "
                          "'^row 1234:', with 2 lines of context:\n"
                          + "\n".join(f"{n:>6}{':' if n == 1234 else '-'}{ROWS[n - 1]}" for n in range(1232, 1237)))
    sent_preview = next(b for b in requests[2]["messages"][-3]["content"] if b.get("type") == "tool_result")
    assert sent_preview["content"] == preview

    # Every request is the log's render, and `scribe log prompt --at` rebuilds each exactly.
    calls = [i for i, e in enumerate(events) if isinstance(e, AssistantEvent)]
    assert len(calls) == len(requests) == 3
    for index, sent in zip(calls, requests, strict=True):
        assert canonical_json(render(events[:index]).body()) == canonical_json(sent)
        rebuilt = run_scribe(["log", "prompt", "--at", str(events[index].seq)], workspace, env)
        assert rebuilt.code == 0, rebuilt.err
        assert json.loads(rebuilt.out) == sent
    # The person's views of the log show the output whole.
    shown = run_scribe(["log", "show", "--full"], workspace, env)
    assert WANTED in shown.out and ROWS[-1] in shown.out


def test_a_changed_preview_size_leaves_an_existing_sessions_requests_alone(workspace: Path, home: Path) -> None:
    """The size is the session's, recorded in its first line: a later run with another setting
    sends the same bytes for what the session showed before, and previews new outputs the same way."""
    def model(request: dict[str, Any]) -> ScriptItem:
        if results(request):
            return Reply.text("Printed.")
        return Reply([tool_use_block("run_command", {"command": COMMAND})])

    with FakeMessagesServer(model) as server:
        first = run_scribe(["run", "-p", "full-auto", "print the table"], workspace,
                           scribe_env(server.base_url, home, SCRIBE_PREVIEW_CHARS="3000"))
        assert first.code == 0, first.err
        earlier = [r.json for r in server.requests]
        again = run_scribe(["run", "-c", "-p", "full-auto", "print it again"], workspace,
                           scribe_env(server.base_url, home, SCRIBE_PREVIEW_CHARS="500"))
        assert again.code == 0, again.err
        later = [r.json for r in server.requests][len(earlier):]
    header = events_of(session_logs(workspace)[0])[0]
    assert isinstance(header, SessionEvent) and header.config["preview_chars"] == 3000
    old, new = results(earlier[1])[0], results(later[1])[0]
    before, after = prefix_blocks(as_request(earlier[1])), prefix_blocks(as_request(later[1]))
    assert after[:len(before)] == before  # the earlier preview, byte for byte
    assert len(old) > 3000 and len(new) > 3000  # both at the session's size, not the new setting's
    def unnumbered(preview: str) -> str:
        return re.sub(r'(is event |"seq": )\d+', r"\1N", preview)

    assert unnumbered(new) == unnumbered(old)
