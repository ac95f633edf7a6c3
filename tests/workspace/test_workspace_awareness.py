"""Workspace awareness end to end, through the real `scribe` executable and the fake API: an
outside edit reaches the model once, a stale edit is refused, and auto-commit, `scribe diff`
and `scribe undo` keep every agent edit reviewable and undoable without touching the person's
own work. A folder that is not a repository gets one clear line instead."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from conftest import git
from helpers import events_of, run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import FileChangeEvent, GitCommitEvent, GitUndoEvent, ToolResultEvent

POLLS = 50  # the scripted model waits at most POLLS x 0.1 s for the watcher to report


def env_for(server: FakeMessagesServer, home: Path, **extra: str) -> dict[str, str]:
    return scribe_env(server.base_url, home, SCRIBE_CURATE_NOTES="0", **extra)


def last_user_texts(request: dict[str, Any]) -> str:
    content = request["messages"][-1]["content"]
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def all_texts(request: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for m in request["messages"] if m["role"] == "user"
                     for b in m["content"] if isinstance(b, dict) and b.get("type") == "text")


def test_an_outside_edit_reaches_the_model_once_and_a_stale_edit_is_refused(workspace: Path, home: Path) -> None:
    (workspace / "notes.txt").write_text("the person's notes\n")
    git(workspace, "add", "notes.txt")
    git(workspace, "commit", "-q", "-m", "notes")
    step = polls = 0
    noticed = False

    def model(request: dict[str, Any]) -> Reply:
        nonlocal step, polls, noticed
        if "tools" not in request:  # not the agent (a memory call)
            return Reply.text("nothing")
        step += 1
        if step == 1:
            return Reply([tool_use_block("read_file", {"path": "notes.txt"}),
                          tool_use_block("write_file", {"path": "draft.txt", "content": "agent's draft\n"})])
        if step == 2:
            # the person, in another window, while the agent waits for the model
            (workspace / "notes.txt").write_text("the person's notes\nplus a line they added\n")
            (workspace / "draft.txt").write_text("agent's draft\nthe person's correction\n")
            return Reply([tool_use_block("write_file", {"path": "calc.py", "content": "x = 1\n"})])
        if not noticed and "[outside scribe: notes.txt" not in last_user_texts(request) and polls < POLLS:
            polls += 1
            time.sleep(0.1)  # the model "thinks" while the watcher settles
            return Reply([tool_use_block("list_files", {})])
        if not noticed:
            noticed = True
            return Reply([tool_use_block("edit_file", {"path": "notes.txt", "old_text": "the person's notes",
                                                       "new_text": "overwritten"})])
        return Reply.text("notes.txt changed under me, so I left it alone.")

    with FakeMessagesServer(model) as server:
        ran = run_scribe(["run", "-p", "full-auto", "--auto-commit", "add calc.py"], workspace,
                         env_for(server, home))
    assert ran.code == 0, ran.err
    assert "[outside scribe: notes.txt was modified; it changed since you last read it]" in ran.err

    events = events_of(session_logs(workspace)[0])
    changes = [(e.path, e.kind, e.stale) for e in events if isinstance(e, FileChangeEvent)]
    assert sorted(changes) == [("draft.txt", "modified", True), ("notes.txt", "modified", True)]  # once each
    # the agent's own writes (draft.txt at first, calc.py) made none

    agent_requests = [r.json for r in server.requests if "tools" in r.json]
    notice = "[outside scribe: notes.txt was modified; it changed since you last read it]"
    first = next(i for i, r in enumerate(agent_requests) if notice in all_texts(r))
    assert notice in last_user_texts(agent_requests[first])  # the newest message carries it
    last_message = agent_requests[first]["messages"][-1]["content"]
    assert last_message[0]["type"] == "tool_result" and last_message[-1]["type"] == "text"
    assert all(all_texts(r).count(notice) == 1 for r in agent_requests[first:])  # never repeated

    refused = [e for e in events if isinstance(e, ToolResultEvent) and e.tool == "edit_file"]
    assert refused and refused[0].is_error and "changed since you last read it" in refused[0].output
    assert (workspace / "notes.txt").read_text() == "the person's notes\nplus a line they added\n"

    # auto-commit took only what is purely the agent's: draft.txt carries the person's correction
    [commit] = [e for e in events if isinstance(e, GitCommitEvent)]
    assert commit.files == ["calc.py"]
    assert commit.skipped == {"draft.txt": "changed outside scribe during the turn"}
    assert git(workspace, "show", "--name-only", "--format=", "HEAD").split() == ["calc.py"]


def test_auto_commit_diff_and_undo_leave_the_persons_work_alone(workspace: Path, home: Path) -> None:
    base = git(workspace, "rev-parse", "HEAD").strip()
    # the person's own work in progress: a staged change and an untracked file
    (workspace / "README.md").write_text("# test workspace\n\nstaged by the person\n")
    git(workspace, "add", "README.md")
    (workspace / "scratch.txt").write_text("the person's scratch\n")
    script = [
        Reply([text_block("Adding it."), tool_use_block("write_file", {
            "path": "src/calc.py", "content": "def add(a, b):\n    return a + b\n"})]),
        Reply([tool_use_block("edit_file", {"path": "README.md", "old_text": "staged by the person",
                                            "new_text": "staged by the person, and the agent"})]),
        Reply([text_block("Added src/calc.py.")]),
        Reply([text_block("I see my commit was undone.")]),
    ]
    with FakeMessagesServer(script) as server:
        env = env_for(server, home)
        prompt = "add a calc module with add()\n\nand mention it in the README"
        ran = run_scribe(["run", "--auto-commit", prompt], workspace, env)
        assert ran.code == 0, ran.err
        [log] = session_logs(workspace)
        session_id = log.stem

        head = git(workspace, "rev-parse", "HEAD").strip()
        assert head != base
        assert git(workspace, "log", "-1", "--format=%B").strip() == (
            f"scribe: add a calc module with add()\n\nScribe-Session: {session_id}")
        assert git(workspace, "show", "--name-only", "--format=", "HEAD").split() == ["src/calc.py"]
        assert "committed" in ran.err and "README.md: had uncommitted changes before this turn" in ran.err
        # what the person staged is still staged, and not in scribe's commit
        assert git(workspace, "diff", "--cached", "--name-only").split() == ["README.md"]
        [commit] = [e for e in events_of(log) if isinstance(e, GitCommitEvent)]
        assert (commit.sha, commit.parent, commit.files) == (head, base, ["src/calc.py"])

        diff = run_scribe(["diff"], workspace, env)
        assert diff.code == 0, diff.err
        assert "+++ b/src/calc.py" in diff.out and "+def add(a, b):" in diff.out
        assert "+staged by the person, and the agent" in diff.out and "+++ b/scratch.txt" in diff.out
        assert "\x1b[" not in diff.out  # plain when piped
        stat = run_scribe(["diff", "--stat"], workspace, env)
        assert stat.code == 0 and "src/calc.py" in stat.out and "3 files changed" in stat.out

        undo = run_scribe(["undo"], workspace, env)
        assert undo.code == 0, undo.err
        assert f"undid {head[:10]}" in undo.err
        assert git(workspace, "rev-parse", "HEAD").strip() == base
        assert not (workspace / "src").exists()  # the file it added, and the folder only it needed
        assert (workspace / "README.md").read_text() == "# test workspace\n\nstaged by the person, and the agent\n"
        assert git(workspace, "diff", "--cached", "--name-only").split() == ["README.md"]
        assert (workspace / "scratch.txt").read_text() == "the person's scratch\n"
        [undone] = [e for e in events_of(log) if isinstance(e, GitUndoEvent)]
        assert (undone.sha, undone.head, undone.files) == (head, base, ["src/calc.py"])

        again = run_scribe(["undo"], workspace, env)
        assert again.code == 1 and again.err.startswith("scribe: nothing to undo: ")
        assert len(again.err.strip().splitlines()) == 1

        cont = run_scribe(["run", "-c", "what happened?"], workspace, env)
        assert cont.code == 0, cont.err
        assert f"[the person undid scribe's commit {head[:10]}" in last_user_texts(server.requests[-1].json)


def test_undo_refuses_when_head_moved_or_its_files_changed_since(workspace: Path, home: Path) -> None:
    script = [Reply([tool_use_block("write_file", {"path": "calc.py", "content": "x = 1\n"})]),
              Reply([text_block("Done.")])]
    with FakeMessagesServer(script) as server:
        env = env_for(server, home, SCRIBE_AUTO_COMMIT="1")
        assert run_scribe(["run", "write calc.py"], workspace, env).code == 0
        head = git(workspace, "rev-parse", "HEAD").strip()

        (workspace / "calc.py").write_text("x = 2  # the person's fix\n")
        refused = run_scribe(["undo"], workspace, env)
        assert refused.code == 1
        assert "uncommitted changes to calc.py would be lost" in refused.err
        assert (workspace / "calc.py").read_text() == "x = 2  # the person's fix\n"

        git(workspace, "commit", "-q", "-am", "the person's fix")
        moved = run_scribe(["undo"], workspace, env)
        assert moved.code == 1 and "HEAD moved" in moved.err and "the person's fix" in moved.err
        assert git(workspace, "rev-parse", "HEAD~1").strip() == head


def test_undo_of_a_session_open_in_another_scribe_is_refused_and_points_to_slash_undo(
        workspace: Path, home: Path) -> None:
    """That process alone writes the session's log, and its watcher would take the restored
    files for changes made outside scribe."""
    from scribe.agent.session.session import store_for
    from scribe.agent.session.start import open_session

    script = [Reply([tool_use_block("write_file", {"path": "calc.py", "content": "x = 1\n"})]),
              Reply([text_block("Done.")])]
    with FakeMessagesServer(script) as server:
        env = env_for(server, home, SCRIBE_AUTO_COMMIT="1")
        assert run_scribe(["run", "write calc.py"], workspace, env).code == 0
        head = git(workspace, "rev-parse", "HEAD").strip()
        held = open_session(store_for(workspace).latest(workspace))  # as a running REPL holds it
        try:
            refused = run_scribe(["undo"], workspace, env)
        finally:
            held.close()
        assert refused.code == 1 and "undo there with /undo, so its log records the undo" in refused.err
        assert len(refused.err.strip().splitlines()) == 1
        assert git(workspace, "rev-parse", "HEAD").strip() == head and (workspace / "calc.py").exists()
        assert run_scribe(["undo"], workspace, env).code == 0  # once it is closed


def test_a_folder_that_is_not_a_repository_says_so_in_one_line(tmp_path: Path, home: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    script = [Reply([tool_use_block("write_file", {"path": "a.txt", "content": "a\n"})]), Reply([text_block("Ok.")])]
    with FakeMessagesServer(script) as server:
        env = env_for(server, home)
        ran = run_scribe(["run", "--auto-commit", "write a.txt"], plain, env)
        assert ran.code == 0, ran.err
        assert "auto_commit is on, but" in ran.err and "is not a git repository; nothing is committed" in ran.err
        out = run_scribe(["diff"], plain, env)
        assert out.code == 2
        assert out.err.strip() == f"scribe: {plain} is not a git repository; scribe diff needs one"
        undone = run_scribe(["undo"], plain, env)  # no git needed: the log holds the edit
        assert undone.code == 0, undone.err
        assert "removed a.txt (created in it)" in undone.err and not (plain / "a.txt").exists()


def test_commit_message_is_the_prompts_first_line_cut_short_with_the_session_trailer() -> None:
    from scribe.agent.actions.autocommit import commit_message

    assert commit_message("\n  fix   the bug \nin detail", "s1") == "scribe: fix the bug\n\nScribe-Session: s1\n"
    long = commit_message("x" * 200, "s1").splitlines()[0]
    assert len(long) == 72 and long.endswith("…")


def test_git_helpers_in_a_repository_without_commits_and_across_sessions(tmp_path: Path) -> None:
    from scribe.workspace.git.repository import commit_paths, session_diff
    from scribe.workspace.git.undo import undo_commit

    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "--initial-branch=main")
    git(repo, "config", "user.name", "t")
    git(repo, "config", "user.email", "t@example.invalid")
    (repo / "a.txt").write_text("a\n")
    assert "a.txt | 1 +" in session_diff(repo, None, stat=True).text  # no commit yet: against the empty tree
    first = commit_paths(repo, ["a.txt"], "scribe: a\n\nScribe-Session: s1\n")
    assert first is not None and first.parent is None
    refused = undo_commit(repo, first.sha, "s1")
    assert not refused.done and "first commit" in refused.message
    (repo / "b.txt").write_text("b\n")
    second = commit_paths(repo, ["b.txt"], "scribe: b\n\nScribe-Session: s1\n")
    assert second is not None and commit_paths(repo, ["b.txt"], "scribe: again\n") is None  # nothing new
    other = undo_commit(repo, None, "s2")
    assert not other.done and "is a commit of session s1, not of s2" in other.message
    done = undo_commit(repo, None, None)  # whatever scribe commit HEAD is
    assert done.done and done.files == ["b.txt"] and "removed b.txt (new in it)" in done.message
    assert not (repo / "b.txt").exists() and git(repo, "rev-parse", "HEAD").strip() == first.sha
