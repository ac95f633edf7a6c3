"""Habits people bring from other coding agents, in the REPL: `/undo` (and `/rewind`) without
git, `@path` attaching a file, `!command` running one without the model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from conftest import git
from helpers import events_of, session_logs
from repl_driver import person, run_repl  # noqa: F401  (person: the autouse fixture of those tests)
from scribe.cli.repl.input import InputArea, ReplCompleter
from scribe.context.compressions import replaced_raw
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import GitConfigEvent, ObservationEvent, ToolResultEvent, UndoEvent, UserEvent


def _log(workspace: Path) -> list:  # type: ignore[type-arg]
    [path] = session_logs(workspace)
    return events_of(path)


def test_undo_without_a_commit_restores_what_the_last_turn_wrote_and_edited(workspace: Path) -> None:
    (workspace / "keep.txt").write_bytes(b"kept\r\nas it was\r\n")
    git(workspace, "add", "keep.txt")
    git(workspace, "commit", "-q", "-m", "keep")
    script = [
        Reply([tool_use_block("write_file", {"path": "docs/new.txt", "content": "fresh\n"}),
               tool_use_block("edit_file", {"path": "README.md", "old_text": "test", "new_text": "edited"}),
               tool_use_block("write_file", {"path": "keep.txt", "content": "overwritten\n"})]),
        # the same file twice in one turn: an edit of what the turn itself wrote
        Reply([tool_use_block("edit_file", {"path": "README.md", "old_text": "edited", "new_text": "twice"})]),
        Reply.text("Changed three files."),
        Reply.text("I see they are back."),
    ]
    ran = run_repl(workspace, script, "change files\r/undo\rwhat now?\r/rewind\r", mode="full-auto")
    out = " ".join(ran.out.split())  # lines as rich wrapped them, joined
    assert (workspace / "README.md").read_text() == "# test workspace\n"
    assert (workspace / "keep.txt").read_bytes() == b"kept\r\nas it was\r\n"
    assert not (workspace / "docs" / "new.txt").exists()
    assert "undid the file changes of the turn “change files”: restored README.md, keep.txt; " \
           "removed docs/new.txt (created in it)" in out
    # the model is told at its next call, from the log
    told = json.dumps(ran.server.requests[-1].json["messages"][-1])
    assert "the person undid your file changes of the turn at seq 1 (/undo)" in told
    events = _log(workspace)
    [undone] = [e for e in events if isinstance(e, UndoEvent)]
    assert undone.turn == 1 and undone.removed == ["docs/new.txt"]
    assert set(undone.files) == {"docs/new.txt", "README.md", "keep.txt"}
    # what made it possible: each file tool's result records how to go back
    records = [e.extra["restore"] for e in events if isinstance(e, ToolResultEvent)]
    assert records[0]["before"] is None and records[2]["content"] == "kept\r\nas it was\r\n"
    assert records[1]["old"] == "test" and records[1]["new"] == "edited"
    # /rewind is /undo; nothing is left to take back, and it says why and what would help
    assert "nothing to undo: scribe's file tools have changed no file in this session" in out
    assert "auto_commit" in out.split("nothing to undo")[1]


def test_undo_refuses_when_a_file_changed_since_and_restores_nothing(workspace: Path) -> None:
    script = [
        Reply([tool_use_block("write_file", {"path": "a.txt", "content": "one\n"}),
               tool_use_block("edit_file", {"path": "README.md", "old_text": "test", "new_text": "edited"})]),
        Reply([tool_use_block("run_command", {"command": "echo two >> a.txt"})]),
        Reply.text("Done."),
    ]
    ran = run_repl(workspace, script, "write a\r/undo\r", mode="full-auto")
    assert "✗ a.txt changed since scribe wrote it; nothing restored" in " ".join(ran.out.split())
    assert (workspace / "a.txt").read_text() == "one\ntwo\n"
    assert (workspace / "README.md").read_text() == "# edited workspace\n"  # not restored either
    assert not [e for e in _log(workspace) if isinstance(e, UndoEvent)]


# -- @path --------------------------------------------------------------------------------------

def _project(workspace: Path) -> None:
    (workspace / "src" / "scribe").mkdir(parents=True)
    (workspace / "src" / "scribe" / "models.py").write_text("class Model:\n    name = 'm'\n")
    (workspace / "src" / "scribe" / "views.py").write_text("")
    (workspace / "build").mkdir()
    (workspace / "build" / "models.py").write_text("")  # ignored below
    (workspace / ".gitignore").write_text("build/\n")


def _completions(workspace: Path, text: str) -> list[str]:
    completer = ReplCompleter(workspace, dict)
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]


def test_at_completion_finds_files_below_by_a_few_letters_of_their_name(workspace: Path) -> None:
    _project(workspace)
    assert _completions(workspace, "look at @mod") == ["src/scribe/models.py"]  # not build/: git ignores it
    assert _completions(workspace, "@mdl") == ["src/scribe/models.py"]  # letters in order
    assert _completions(workspace, "@sr") == ["src/"]  # the folder's own entries, no fuzzy noise
    assert _completions(workspace, "@scribe/v") == ["src/scribe/views.py"]  # past a slash: the path
    assert _completions(workspace, "@py") == ["src/scribe/views.py", "src/scribe/models.py"]  # shorter first
    assert _completions(workspace, "@vie") == ["src/scribe/views.py"]  # a name starting so ranks first
    (workspace / "reviews.md").write_text("")
    assert _completions(workspace, "@vie") == ["src/scribe/views.py", "reviews.md"]
    assert _completions(workspace, "@.git") == [".gitignore"]
    assert _completions(workspace, "@.git/") == [] and _completions(workspace, "@.scribe/se") == []  # never inside


def _typed(workspace: Path, keys: str) -> str:
    """What the REPL's input returns after `keys` (then Enter), completion and Tab as a person has them."""
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        area = InputArea(workspace, workspace / ".scribe" / "history", dict, lambda width: "")
        pipe.send_text(keys + "\r")
        return area.read()


def test_once_drawn_is_called_once_the_prompt_is_first_drawn(workspace: Path) -> None:
    """The REPL starts the SDK's import from here: after the prompt is drawn, never before, once."""
    calls: list[str] = []
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        area = InputArea(workspace, workspace / ".scribe" / "history", dict, lambda width: "")
        area.once_drawn(lambda: calls.append("drawn"))
        assert calls == []
        pipe.send_text("first\r")
        assert area.read() == "first" and calls == ["drawn"]
        pipe.send_text("second\r")
        assert area.read() == "second" and calls == ["drawn"]


def test_tab_completes_the_same_way_every_time(workspace: Path) -> None:
    _project(workspace)
    assert _typed(workspace, "@sr\t") == "@src/"
    assert _typed(workspace, "@sr\t\t") == "@src/scribe/"  # into the folder, never back to @sr
    # models.py and views.py share nothing more: the first is chosen, the menu open on it
    assert _typed(workspace, "@sr\t\t\t") == "@src/scribe/models.py"
    assert _typed(workspace, "@sr\t\t\t\t") == "@src/scribe/models.py"  # taken: Tab again keeps it
    assert _typed(workspace, "@sr\t\t\t\x1b[B") == "@src/scribe/views.py"  # Down chooses another
    assert _typed(workspace, "read @mod\t please") == "read @src/scribe/models.py please"


def test_an_at_path_attaches_the_file_to_the_message(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(workspace)
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-0123456789abcdef")
    (workspace / "config.txt").write_text("token = tok-0123456789abcdef\n")
    (workspace / "big.txt").write_text("".join(f"line {i}\n" for i in range(20_000)))
    (workspace.parent / "outside.txt").write_text("not for the model\n")
    keys = ("explain @mod\t and @config.txt, @big.txt @../outside.txt @.git/config @src @someone @nope.md "
            "@pytest.mark.slow\r")
    ran = run_repl(workspace, [Reply.text("It is a model.")], keys)
    out = " ".join(ran.out.split())
    assert "attached src/scribe/models.py (2 lines)" in out
    assert "attached config.txt (1 line)" in out
    assert "attached big.txt: its first " in out and "of 20,000 lines (cut at 40,000 characters)" in out
    assert "@../outside.txt: outside the workspace; not attached" in out
    assert "@.git/config: inside .git/, which is not attached; not attached" in out
    assert "@src: a folder (name a file in it); not attached" in out
    assert "@nope.md: no such file in the workspace; not attached (Tab completes @ paths)" in out
    assert "@someone:" not in out and "@pytest.mark.slow:" not in out  # a handle, a decorator: left as typed
    [sent] = [b["text"] for b in ran.server.requests[0].json["messages"][-1]["content"] if b["type"] == "text"]
    assert sent.startswith("explain @src/scribe/models.py and @config.txt, @big.txt")
    assert '<attached file="src/scribe/models.py" lines="2">\nclass Model:\n    name = \'m\'\n</attached>' in sent
    assert "token = [redacted DEPLOY_TOKEN]" in sent and "tok-0123456789abcdef" not in sent
    assert "line 19999" not in sent and "lines 4" in sent and "are not attached; read_file shows them]" in sent
    assert "not for the model" not in sent and "[core]" not in sent
    # logged as the person's input: the log alone rebuilds what was sent
    [user] = [e for e in _log(workspace) if isinstance(e, UserEvent)]
    assert user.text == sent


# -- !command -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "runs"), [
    ("read-only", False),
    ("ask", True),
    ("accept-edits", True),
    ("full-auto", True),
])
def test_a_bang_command_is_the_persons_own_and_runs_without_a_question(workspace: Path, mode: str, runs: bool) -> None:
    # The person's own command: no mode asks about it (read-only refuses it outright). A question
    # would take the next message as what was typed at it, so the message the model gets shows
    # that none was asked.
    keys = "!echo from-the-shell > shell.txt; cat shell.txt; exit 3\rwhat did it say?\r"
    ran = run_repl(workspace, [Reply.text("It said from-the-shell.")], keys, mode=mode)
    assert (workspace / "shell.txt").exists() == runs
    users = [e for e in _log(workspace) if isinstance(e, UserEvent)]
    sent = [b["text"] for b in ran.server.requests[0].json["messages"][-1]["content"] if b["type"] == "text"]
    assert "allow run_command?" not in ran.out
    if runs:
        assert "│ from-the-shell" in ran.out and "│ [exit code 3]" in ran.out
        # the model sees the command and its output with the next message, from the log
        assert len(users) == 2 and users[0].text.startswith("[the person ran this shell command")
        assert "$ echo from-the-shell > shell.txt; cat shell.txt; exit 3\nfrom-the-shell\n[exit code 3]" in users[0].text
        assert sent == [users[0].text, "what did it say?"]
    else:
        assert [u.text for u in users] == ["what did it say?"] and sent == ["what did it say?"]
        assert "✗ !command runs nothing in permission mode read-only; /mode ask (or any other mode) runs it" in ran.out


def test_git_configuration_a_bang_command_planted_is_shown_and_logged(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    keys = "!git init -q nested && git -C nested config core.sshCommand /bin/true\rlooked?\r"
    ran = run_repl(plain, [Reply.text("Yes.")], keys, mode="full-auto")
    shown = " ".join(ran.out.split())  # the terminal wraps the line
    assert "a new git repository at nested/.git" in shown and "core.sshcommand = /bin/true" in shown, ran.out
    [event] = [e for e in _log(plain) if isinstance(e, GitConfigEvent)]
    assert event.changes[0]["folder"] == "nested/.git" and event.changes[0]["new"]


def test_bang_bang_sends_a_message_and_a_lone_bang_says_what_it_takes(workspace: Path) -> None:
    ran = run_repl(workspace, [Reply.text("Noted.")], "!\r!!important: read this\r", mode="full-auto")
    assert "! needs a command after it" in ran.out
    assert ran.texts == ["!important: read this"]


# -- memory notices ------------------------------------------------------------------------------

def test_every_compression_says_in_one_line_what_it_folded(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compression takes events' words out of the prompt: each one says so, in one line naming
    the events it folded, how many they were, the tokens before and after, and the observation
    that holds them now; what compression means is said once."""
    monkeypatch.setenv("SCRIBE_OBSERVE_TOKENS", "500")  # the least: compression on nearly every turn

    def answer(request: dict) -> Reply:  # type: ignore[type-arg]
        if request.get("tool_choice"):  # the observer (side calls force their answer tool)
            return Reply.text("🔴 the user asked about the project\n🟡 the model answered at length\n"
                              "Current task: answering. Next step: wait for the next question.")
        return Reply.text("A long answer. " + "The project does many things. " * 120)

    keys = "".join(f"question {i}, tell me more\r" for i in range(5))
    ran = run_repl(workspace, FakeMessagesServer(answer), keys, mode="full-auto")
    events = _log(workspace)
    observed = [e for e in events if isinstance(e, ObservationEvent)]
    assert len(observed) >= 3, observed  # memory did compress, again and again
    shown = " ".join(ran.out.split())  # the terminal wraps the lines
    said = re.findall(r"memory: folded events (\d+)-(\d+) \((\d+) events?, ~[\d,]+ tokens\) into observation (\d+) "
                      r"\(~[\d,]+ tokens\); `scribe log show --compressions` shows them beside it", shown)
    assert [(int(a), int(b), int(seq)) for a, b, _, seq in said] == [(o.seq_from, o.seq_to, o.seq) for o in observed]
    for first, last, count, _ in said:
        assert int(count) == sum(int(first) <= e.seq <= int(last) and replaced_raw(e) for e in events)
    assert shown.count("memory compression: older turns are now kept as short notes") == 1
