"""read_file, write_file and edit_file on a real git workspace, through run_tool as the agent
calls them."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from scribe.tools.base import ToolContext, ToolOutput
from scribe.tools.registry import builtin_tools, run_tool


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace)


def call(ctx: ToolContext, name: str, **args: Any) -> ToolOutput:
    return run_tool(builtin_tools(), name, args, ctx)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- read_file -------------------------------------------------------------------------------


def test_read_numbers_lines_like_cat_n_and_records_hash(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.py").write_text("one\ntwo\n")
    out = call(ctx, "read_file", path="a.py")
    assert not out.is_error
    assert out.text == "     1\tone\n     2\ttwo"
    assert ctx.seen_hashes["a.py"] == sha(b"one\ntwo\n")


def test_read_offset_and_limit_say_what_remains(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = call(ctx, "read_file", path="n.txt", offset=3, limit=4)
    assert out.text.splitlines() == [
        "     3\tline 3",
        "     4\tline 4",
        "     5\tline 5",
        "     6\tline 6",
        "… 4 more lines; use offset=7",
    ]
    tail = call(ctx, "read_file", path="n.txt", offset=7)
    assert tail.text.splitlines()[-1] == "    10\tline 10"
    assert "more lines" not in tail.text


def test_read_default_limit_is_2000_lines(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "big.txt").write_text("x\n" * 2500)
    out = call(ctx, "read_file", path="big.txt")
    lines = out.text.splitlines()
    assert lines[1999] == "  2000\tx"
    assert lines[-1] == "… 500 more lines; use offset=2001"


def test_read_past_the_end_and_empty_file(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "short.txt").write_text("a\nb\n")
    past = call(ctx, "read_file", path="short.txt", offset=5)
    assert past.is_error and past.text == "offset 5 is past the end of short.txt (2 lines)"
    (workspace / "empty.txt").write_text("")
    assert call(ctx, "read_file", path="empty.txt").text == "empty.txt is empty"


def test_read_missing_file_and_directory(ctx: ToolContext, workspace: Path) -> None:
    missing = call(ctx, "read_file", path="nope/x.py")
    assert missing.is_error and missing.text == "file not found: nope/x.py"
    (workspace / "pkg").mkdir()
    directory = call(ctx, "read_file", path="pkg")
    assert directory.is_error and "is a directory; use list_files" in directory.text


def special_files(workspace: Path) -> dict[str, str]:
    """A FIFO, a socket and (as root) a character device in the workspace: path -> what it is."""
    os.mkfifo(workspace / "pipe")  # opening it for writing (or reading) would block forever
    made = {"pipe": "a named pipe (FIFO)", "sock": "a socket"}
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(workspace / "sock"))
    listener.close()  # the socket file stays
    if os.geteuid() == 0:
        os.mknod(workspace / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        made["null"] = "a character device"
    return made


def test_every_file_tool_refuses_special_files_without_opening_them(ctx: ToolContext, workspace: Path) -> None:
    for path, kind in special_files(workspace).items():
        refusal = f"{path} is {kind}, not a regular file"
        # Run where a hang would show: the write must come back at once, not wait for a reader.
        result: list[ToolOutput] = []
        writer = threading.Thread(target=lambda p=path, into=result: into.append(
            call(ctx, "write_file", path=p, content="x")), daemon=True)
        writer.start()
        writer.join(timeout=10)
        if writer.is_alive():  # let the blocked open go, then fail
            os.close(os.open(workspace / path, os.O_RDONLY | os.O_NONBLOCK))
            writer.join(timeout=10)
            pytest.fail(f"write_file to {path} blocked")
        assert result[0].is_error and result[0].text == f"{refusal}; only regular files are written"
        assert call(ctx, "read_file", path=path).text == refusal
        assert call(ctx, "edit_file", path=path, old_text="a", new_text="b").text == refusal
    assert stat.S_ISFIFO(os.stat(workspace / "pipe").st_mode)  # still the FIFO, not replaced


def test_read_refuses_binary_with_a_summary(ctx: ToolContext, workspace: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x01\x02" * 1000
    (workspace / "logo.png").write_bytes(png)
    out = call(ctx, "read_file", path="logo.png")
    assert not out.is_error
    assert out.text == "logo.png is a binary file (PNG image, 3.0 KB); its contents are not shown"
    assert ctx.seen_hashes["logo.png"] == sha(png)
    (workspace / "blob.bin").write_bytes(b"abc\x00def")
    assert "binary file (binary data, 7 bytes)" in call(ctx, "read_file", path="blob.bin").text


def test_read_refuses_mostly_undecodable_bytes_without_nul(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "noise.dat").write_bytes(bytes(range(0x80, 0x100)) * 20)
    out = call(ctx, "read_file", path="noise.dat")
    assert "binary file (binary data, not UTF-8 text" in out.text


def test_read_replaces_a_few_bad_bytes_instead_of_failing(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "latin.txt").write_bytes(b"caf\xe9 au lait\nplain line\n")
    out = call(ctx, "read_file", path="latin.txt")
    assert not out.is_error
    assert out.text.splitlines() == ["     1\tcaf\ufffd au lait", "     2\tplain line"]


def test_read_cuts_very_long_lines_with_a_marker(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "min.js").write_text("y" * 5000 + "\nshort\n")
    first, second = call(ctx, "read_file", path="min.js").text.splitlines()
    assert first == "     1\t" + "y" * 2000 + "… [line cut: 3000 more chars]"
    assert second == "     2\tshort"


def test_a_huge_single_line_is_read_in_memory_bounded_by_what_is_shown(workspace: Path) -> None:
    """64 MB on one line: the read streams it, holding a piece at a time, and still counts the
    characters it cut and hashes every byte. Measured in a fresh process, whose peak is its own."""
    size = 64_000_000
    with (workspace / "one-line.txt").open("wb") as handle:
        for _ in range(size // 1_000_000):
            handle.write(b"z" * 1_000_000)
        handle.write(b"\nlast\n")
    code = (
        "import json, resource, sys; from pathlib import Path;"
        "from scribe.tools.base import ToolContext; from scribe.tools.registry import builtin_tools, run_tool;"
        "ctx = ToolContext(workspace=Path(sys.argv[1])); run_tool(builtin_tools(), 'read_file', {'path': 'README.md'}, ctx);"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss;"
        "out = run_tool(builtin_tools(), 'read_file', {'path': 'one-line.txt'}, ctx);"
        "grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before;"
        "print(json.dumps({'text': out.text, 'grew_kb': grew, 'hash': ctx.seen_hashes['one-line.txt']}))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(workspace)], capture_output=True, text=True, check=True)
    seen = json.loads(done.stdout)
    assert seen["text"] == "     1\t" + "z" * 2000 + f"… [line cut: {size - 2000} more chars]\n     2\tlast"
    assert seen["hash"] == sha((workspace / "one-line.txt").read_bytes())
    assert seen["grew_kb"] < 16_000, seen["grew_kb"]  # reading it whole held 64 MB twice over


def test_line_pieces_keep_cuts_and_line_endings_exact(ctx: ToolContext, workspace: Path) -> None:
    from scribe.tools.numbered import PIECE_BYTES

    # CRs at a piece's end wait to see whether the line ends; a character split across pieces
    # decodes whole.
    long_crlf = b"a" * (PIECE_BYTES - 1) + b"\r\n"
    split_char = b"b" * (PIECE_BYTES - 1) + "é".encode() + b"c\n"
    (workspace / "pieces.txt").write_bytes(long_crlf + split_char + b"end")
    first, second, third, note = call(ctx, "read_file", path="pieces.txt").text.splitlines()
    assert first == "     1\t" + "a" * 2000 + f"… [line cut: {PIECE_BYTES - 1 - 2000} more chars]"
    assert second == "     2\t" + "b" * 2000 + f"… [line cut: {PIECE_BYTES - 2000 + 1} more chars]"
    assert (third, note) == ("     3\tend", "(file uses CRLF line endings)")


def test_read_strips_crlf_and_says_so(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "win.txt").write_bytes(b"a\r\nb\r\n")
    assert call(ctx, "read_file", path="win.txt").text.splitlines() == [
        "     1\ta",
        "     2\tb",
        "(file uses CRLF line endings)",
    ]


def test_read_inside_git_is_allowed(ctx: ToolContext) -> None:
    out = call(ctx, "read_file", path=".git/HEAD")
    assert not out.is_error and "refs/heads/main" in out.text


# --- write_file ------------------------------------------------------------------------------


def test_write_creates_parents_then_overwrites(ctx: ToolContext, workspace: Path) -> None:
    created = call(ctx, "write_file", path="src/pkg/mod.py", content="a = 1\nb = 2\n")
    assert created.text == "created src/pkg/mod.py: wrote 2 lines (12 bytes)"
    assert (workspace / "src/pkg/mod.py").read_text() == "a = 1\nb = 2\n"
    assert ctx.seen_hashes["src/pkg/mod.py"] == sha(b"a = 1\nb = 2\n")
    over = call(ctx, "write_file", path="./src/pkg/mod.py", content="é")
    assert over.text == "overwrote src/pkg/mod.py: wrote 1 line (2 bytes)"
    assert (workspace / "src/pkg/mod.py").read_bytes() == "é".encode()


def test_write_refuses_to_overwrite_a_file_changed_outside(ctx: ToolContext, workspace: Path) -> None:
    call(ctx, "write_file", path="notes.md", content="mine\n")
    (workspace / "notes.md").write_text("the user's edit\n")
    out = call(ctx, "write_file", path="notes.md", content="clobber\n")
    assert out.is_error
    assert out.text == "notes.md changed since you last read it; read it again before editing"
    assert (workspace / "notes.md").read_text() == "the user's edit\n"


def test_write_to_a_directory_is_an_error(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "d").mkdir()
    out = call(ctx, "write_file", path="d", content="x")
    assert out.is_error and out.text == "d is a directory; give a file path"


# --- edit_file -------------------------------------------------------------------------------


def test_writes_replace_the_file_keeping_its_mode_and_symlinks(ctx: ToolContext, workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("echo one\n")
    script.chmod(0o750)
    (workspace / "alias.sh").symlink_to("run.sh")
    call(ctx, "read_file", path="run.sh")
    assert not call(ctx, "edit_file", path="alias.sh", old_text="one", new_text="two").is_error
    assert not call(ctx, "write_file", path="alias.sh", content="echo three\n").is_error
    assert (workspace / "alias.sh").is_symlink() and os.readlink(workspace / "alias.sh") == "run.sh"
    assert script.read_text() == "echo three\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    umask = os.umask(0o022)
    os.umask(umask)
    assert not call(ctx, "write_file", path="new.txt", content="x").is_error
    assert stat.S_IMODE((workspace / "new.txt").stat().st_mode) == 0o666 & ~umask
    assert not [p for p in os.listdir(workspace) if p.endswith(".scribe-tmp")]


def test_edit_replaces_the_single_match_and_returns_a_diff(ctx: ToolContext, workspace: Path) -> None:
    body = "".join(f"line{i}\n" for i in range(1, 11))
    (workspace / "m.txt").write_text(body)
    call(ctx, "read_file", path="m.txt")
    out = call(ctx, "edit_file", path="m.txt", old_text="line5\n", new_text="five\nFIVE\n")
    assert not out.is_error
    assert out.text.splitlines() == [
        "--- a/m.txt",
        "+++ b/m.txt",
        "@@ -2,7 +2,8 @@",
        " line2",
        " line3",
        " line4",
        "-line5",
        "+five",
        "+FIVE",
        " line6",
        " line7",
        " line8",
    ]
    new = body.replace("line5\n", "five\nFIVE\n")
    assert (workspace / "m.txt").read_text() == new
    assert ctx.seen_hashes["m.txt"] == sha(new.encode())
    # The recorded hash lets a second edit go through without a re-read.
    assert not call(ctx, "edit_file", path="m.txt", old_text="line9", new_text="nine").is_error


def test_edit_counts_multiple_matches(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "x.py").write_text("x = 1\nx = 1\nx = 1\n")
    out = call(ctx, "edit_file", path="x.py", old_text="x = 1", new_text="x = 2")
    assert out.is_error
    assert out.text == "old_text matches 3 times in x.py; include more surrounding lines to make it unique"
    assert (workspace / "x.py").read_text() == "x = 1\nx = 1\nx = 1\n"


def test_edit_not_found_and_degenerate_inputs(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "x.py").write_text("x = 1\n")
    missing = call(ctx, "edit_file", path="x.py", old_text="y = 1", new_text="y = 2")
    assert missing.is_error and missing.text.startswith("old_text not found in x.py")
    assert call(ctx, "edit_file", path="x.py", old_text="", new_text="a").text.startswith("old_text is empty")
    same = call(ctx, "edit_file", path="x.py", old_text="x", new_text="x")
    assert same.is_error and "identical" in same.text
    absent = call(ctx, "edit_file", path="new.py", old_text="a", new_text="b")
    assert absent.is_error and absent.text == "file not found: new.py"


def test_edit_refuses_a_file_changed_since_it_was_read(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "x.py").write_text("a = 1\n")
    call(ctx, "read_file", path="x.py")
    (workspace / "x.py").write_text("a = 1\nb = 2\n")  # someone else's change
    out = call(ctx, "edit_file", path="x.py", old_text="a = 1", new_text="a = 3")
    assert out.is_error
    assert out.text == "x.py changed since you last read it; read it again before editing"
    assert (workspace / "x.py").read_text() == "a = 1\nb = 2\n"
    call(ctx, "read_file", path="x.py")
    assert not call(ctx, "edit_file", path="x.py", old_text="a = 1", new_text="a = 3").is_error


def test_edit_keeps_crlf_and_undecodable_bytes(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"caf\xe9\r\nold one\r\nold two\r\n")
    out = call(ctx, "edit_file", path="w.txt", old_text="old one\nold two\n", new_text="new\n")
    assert not out.is_error, out.text
    assert (workspace / "w.txt").read_bytes() == b"caf\xe9\r\nnew\r\n"
    assert "caf\ufffd" in out.text and "\r" not in out.text


def test_edit_refuses_binary(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "b.bin").write_bytes(b"head\x00tail")
    out = call(ctx, "edit_file", path="b.bin", old_text="head", new_text="HEAD")
    assert out.is_error and out.text == "b.bin is a binary file; edit_file only edits text"
