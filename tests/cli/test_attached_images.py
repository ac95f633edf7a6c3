"""Images attached to a message, end to end: `@pic.png` in the REPL and `scribe run --image`
send a valid image block (the fake API checks it as the real one does), the image is kept beside
the log, `scribe log prompt --at` rebuilds the request byte for byte from the log and that store,
and what is missing, fake or unreadable is said in one line."""

from __future__ import annotations

import base64
import io
import os
import stat
from pathlib import Path
from typing import Any

from PIL import Image

from helpers import events_of, run_scribe, scribe_env, session_logs
from repl_driver import person, run_repl  # noqa: F401  (person: the autouse fixture of those tests)
from scribe.context.render import canonical_json
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import AssistantEvent, ToolResultEvent, UserEvent
from scribe.log.images import image_refs


def picture(path: Path, size: tuple[int, int], kind: str = "PNG") -> Path:
    Image.linear_gradient("L").resize(size).convert("RGB").save(path, kind)
    return path


def images_sent(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in request["messages"][-1]["content"] if b["type"] == "image"]


def decoded(block: dict[str, Any]) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(block["source"]["data"])))


def test_an_at_image_is_sent_sized_down_kept_privately_and_rebuilt_exactly(workspace: Path, tmp_path: Path) -> None:
    picture(workspace / "pic.png", (3000, 2000))
    (workspace / "fake.png").write_text("a text file that claims to be a PNG\n")
    os.mkfifo(workspace / "pipe.png")
    picture(tmp_path / "outside.png", (10, 10))
    (workspace / "out.png").symlink_to(tmp_path / "outside.png")
    keys = "what is wrong in @pic.png? Not in @fake.png @pipe.png or @out.png\r"
    ran = run_repl(workspace, [Reply.text("The chart's axis is cut off.")], keys)
    out = " ".join(ran.out.split())
    assert "attached image pic.png (3000x2000, sized down to 1313x875, " in out
    assert "@fake.png: not a PNG image (PNG, JPEG, GIF and WebP are attached); not attached" in out
    assert "@pipe.png: not a regular file; not attached" in out
    assert "@out.png: outside the workspace; not attached" in out
    assert "The chart's axis is cut off." in out
    # one image went, before the text, whole and within what the API takes (else the fake refuses)
    [request] = [r.json for r in ran.server.requests]
    [block] = images_sent(request)
    content = request["messages"][-1]["content"]
    assert content.index(block) < len(content) - 1 and content[-1]["type"] == "text"
    assert block["source"]["media_type"] == "image/png" and decoded(block).size == (1313, 875)
    # the log names it; the store beside the log holds its bytes, privately
    [log] = session_logs(workspace)
    [user] = [e for e in events_of(log) if isinstance(e, UserEvent)]
    [ref] = image_refs(user.images)
    assert ref.name == "pic.png" and (ref.width, ref.height) == (1313, 875)
    kept = log.with_suffix("") / "images" / f"{ref.sha256}.png"
    assert base64.b64encode(kept.read_bytes()).decode() == block["source"]["data"]
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    # the log and its store rebuild the request byte for byte, in another process
    [answer] = [e for e in events_of(log) if isinstance(e, AssistantEvent)]
    env = scribe_env(os.environ["ANTHROPIC_BASE_URL"], tmp_path / "home")
    rebuilt = run_scribe(["log", "prompt", "--at", str(answer.seq)], workspace, env, process=True)
    assert rebuilt.code == 0, rebuilt.err
    assert rebuilt.out == canonical_json(request) + "\n"


def test_run_image_sends_it_and_a_missing_image_is_one_line_and_never_stops_the_session(
        workspace: Path, home: Path, tmp_path: Path) -> None:
    shot = picture(tmp_path / "shot.jpg", (640, 480), "JPEG")  # outside the workspace: the person named it
    server = FakeMessagesServer([Reply.text("A gradient."), Reply.text("Still here.")])
    env = scribe_env(server.start(), home)
    try:
        ran = run_scribe(["run", "--image", str(shot), "describe it"], workspace, env)
        assert ran.code == 0, ran.err
        [block] = images_sent(server.requests[0].json)
        assert block["source"]["media_type"] == "image/jpeg"
        assert base64.b64decode(block["source"]["data"]) == shot.read_bytes()  # within bounds: sent as it is
        [log] = session_logs(workspace)
        answer = next(e for e in events_of(log) if isinstance(e, AssistantEvent))
        rebuilt = run_scribe(["log", "prompt", "--at", str(answer.seq)], workspace, env)
        assert rebuilt.out == canonical_json(server.requests[0].json) + "\n"
        # the page shows a thumbnail, inline
        page = run_scribe(["log", "html", "-o", "-"], workspace, env)
        assert page.code == 0 and '<figure class="thumb"><img src="data:image/jpeg;base64,' in page.out
        assert "shot.jpg (640x480 JPEG, " in page.out and "img-src data:;" in page.out
        # the store loses it: rebuilding says so in one line; the session goes on without it
        for kept in (log.with_suffix("") / "images").iterdir():
            kept.unlink()
        missing = run_scribe(["log", "prompt", "--at", str(answer.seq)], workspace, env)
        assert missing.code == 2 and missing.out == "" and missing.err.count("\n") == 1
        assert missing.err.startswith("scribe: the image shot.jpg (sha256 ") and "cannot be rebuilt" in missing.err
        again = run_scribe(["run", "-c", "and now?"], workspace, env)
        assert again.code == 0, again.err
        texts = [b["text"] for m in server.requests[1].json["messages"] for b in m["content"] if b["type"] == "text"]
        assert "[image shot.jpg was attached here; it is no longer in the session's image store]" in texts
        assert not any(b["type"] == "image" for m in server.requests[1].json["messages"] for b in m["content"])
        page = run_scribe(["log", "html", "-o", "-"], workspace, env)
        assert "shot.jpg (640x480 JPEG, " in page.out and "not in the session's image store" in page.out
        assert "<img" not in page.out
    finally:
        server.stop()


def test_run_refuses_an_image_that_is_not_one_before_anything_is_sent(workspace: Path, home: Path) -> None:
    (workspace / "notes.png").write_text("just notes\n")
    server = FakeMessagesServer([Reply.text("never")])
    env = scribe_env(server.start(), home)
    try:
        ran = run_scribe(["run", "--image", "notes.png", "look"], workspace, env)
        missing = run_scribe(["run", "--image", "nope.png", "look"], workspace, env)
    finally:
        server.stop()
    assert ran.code == 2 and ran.err.count("\n") == 1 and "Traceback" not in ran.err
    assert ran.err == ("scribe: --image notes.png: not a PNG image (PNG, JPEG, GIF and WebP are attached); "
                       "nothing was sent\n")
    assert missing.code == 2 and missing.err.startswith("scribe: --image nope.png: cannot be read (no such file")
    assert server.requests == [] and session_logs(workspace) == []


def test_recall_says_where_an_attached_image_is_kept(workspace: Path) -> None:
    picture(workspace / "pic.png", (200, 100))
    script = [Reply([tool_use_block("recall", {"seq_from": 0, "seq_to": 3})]), Reply.text("Found it.")]
    ran = run_repl(workspace, script, "look at @pic.png\r")
    [log] = session_logs(workspace)
    [result] = [e for e in events_of(log) if isinstance(e, ToolResultEvent)]
    [ref] = image_refs(next(e for e in events_of(log) if isinstance(e, UserEvent)).images)
    where = log.with_suffix("") / "images" / ref.file_name
    assert "[attached image pic.png (200x100 PNG, " in result.output and f"kept at {where}]" in result.output
    assert "Found it." in ran.out
