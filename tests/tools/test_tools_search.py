"""list_files and search_files: git's view of the file set, globs, regex search with the
Python back end (ripgrep is used when present; the fallback is what these tests pin down)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scribe.tools import search
from scribe.tools.base import ToolContext, ToolOutput
from scribe.tools.listing import glob_match
from scribe.tools.registry import builtin_tools, run_tool


@pytest.fixture
def no_rg(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the Python fallback even where ripgrep is installed."""
    monkeypatch.setattr(search, "find_ripgrep", lambda: None)


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    files = {
        ".gitignore": "build/\n*.log\n",
        "src/app.py": "import os\n\ndef main():\n    return os.getcwd()\n",
        "src/util/helpers.py": "def helper():\n    return 'TODO: more'\n",
        "src/util/data.json": '{"todo": true}\n',
        "tests/test_app.py": "from src.app import main\n",
        "build/out.py": "def main(): pass\n",
        "debug.log": "main crashed\n",
        ".github/ci.yml": "run: main\n",
    }
    for name, body in files.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return ToolContext(workspace=workspace)


def call(ctx: ToolContext, name: str, **args: Any) -> ToolOutput:
    return run_tool(builtin_tools(), name, args, ctx)


# --- list_files ------------------------------------------------------------------------------


def test_list_honours_gitignore_and_includes_untracked(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "README.md").unlink()  # tracked but deleted: not listed
    out = call(ctx, "list_files")
    assert out.text.splitlines() == [
        ".github/ci.yml",
        ".gitignore",
        "src/app.py",
        "src/util/data.json",
        "src/util/helpers.py",
        "tests/test_app.py",
    ]


def test_list_never_shows_scribe_state_even_if_not_ignored(ctx: ToolContext, workspace: Path) -> None:
    (workspace / ".scribe").mkdir()
    (workspace / ".scribe/log.jsonl").write_text("{}\n")
    assert ".scribe" not in call(ctx, "list_files").text


def test_list_with_path_and_patterns(ctx: ToolContext) -> None:
    assert call(ctx, "list_files", path="src/util").text == "src/util/data.json\nsrc/util/helpers.py"
    assert call(ctx, "list_files", pattern="*.py").text.splitlines() == [
        "src/app.py",
        "src/util/helpers.py",
        "tests/test_app.py",
    ]
    assert call(ctx, "list_files", pattern="src/**/*.py").text == "src/app.py\nsrc/util/helpers.py"
    assert call(ctx, "list_files", path="src", pattern="util/*.json").text == "src/util/data.json"
    empty = call(ctx, "list_files", pattern="*.rs")
    assert (empty.text, empty.is_error) == (
        "no files match '*.rs' (files ignored by .gitignore are not listed)",
        False,
    )
    ignored = call(ctx, "list_files", path="build")
    assert ignored.text == "no files under build (files ignored by .gitignore are not listed)"
    missing = call(ctx, "list_files", path="nowhere")
    assert missing.is_error and missing.text == "path not found: nowhere"


def test_list_outside_git_walks_and_skips_noise(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for name in (
        "a.py",
        "sub/b.txt",
        "node_modules/x/index.js",
        "__pycache__/a.pyc",
        ".venv/bin/python",
        ".scribe/log.jsonl",
        "build/keep.txt",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    out = call(ToolContext(workspace=root), "list_files")
    assert out.text.splitlines() == ["a.py", "build/keep.txt", "sub/b.txt"]


def test_list_is_capped(ctx: ToolContext, workspace: Path) -> None:
    many = workspace / "many"
    many.mkdir()
    for i in range(1005):
        (many / f"f{i:04}.txt").write_text("")
    lines = call(ctx, "list_files", path="many").text.splitlines()
    assert len(lines) == 1001
    assert lines[0] == "many/f0000.txt"
    assert lines[-1] == "… 5 more files; narrow with path or pattern"


def test_glob_match_rules() -> None:
    assert glob_match("a/b/c.py", "*.py")
    assert glob_match("c.py", "**/*.py")
    assert glob_match("a/c.py", "a/**/c.py")
    assert glob_match("a/b/c.py", "a/**/c.py")
    assert glob_match("a/b/c.py", "./a/*/c.py")
    assert not glob_match("a/b/c.py", "b/*.py")
    assert not glob_match("a/b/c.PY", "*.py")


# --- search_files ----------------------------------------------------------------------------


@pytest.mark.usefixtures("no_rg")
def test_search_regex_gives_path_line_text_sorted(ctx: ToolContext) -> None:
    out = call(ctx, "search_files", pattern=r"def \w+\(")
    assert out.text.splitlines() == [
        "src/app.py:3:def main():",
        "src/util/helpers.py:1:def helper():",
    ]  # build/out.py is gitignored


@pytest.mark.usefixtures("no_rg")
def test_search_with_path_flags_and_no_match(ctx: ToolContext) -> None:
    assert call(ctx, "search_files", pattern="(?i)todo", path="src/util").text.splitlines() == [
        'src/util/data.json:1:{"todo": true}',
        "src/util/helpers.py:2:    return 'TODO: more'",
    ]
    assert call(ctx, "search_files", pattern="main", path="tests/test_app.py").text == (
        "tests/test_app.py:1:from src.app import main"
    )
    none = call(ctx, "search_files", pattern="zebra")
    assert (none.text, none.is_error) == ("no matches for 'zebra'", False)


@pytest.mark.usefixtures("no_rg")
def test_search_lists_a_directory_before_a_dotted_sibling(ctx: ToolContext, workspace: Path) -> None:
    for name in ("a.b/x.txt", "a/y.txt"):
        (workspace / name).parent.mkdir()
        (workspace / name).write_text("needle\n")
    assert call(ctx, "search_files", pattern="needle").text == "a/y.txt:1:needle\na.b/x.txt:1:needle"
    assert call(ctx, "list_files", pattern="*.txt").text == "a/y.txt\na.b/x.txt"


@pytest.mark.usefixtures("no_rg")
def test_search_invalid_regex_is_a_clear_error(ctx: ToolContext) -> None:
    out = call(ctx, "search_files", pattern="def (")
    assert out.is_error
    assert out.text.startswith("invalid regular expression 'def (': missing )")


@pytest.mark.usefixtures("no_rg")
def test_search_skips_binary_and_symlinks_and_replaces_bad_bytes(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "blob.bin").write_bytes(b"needle\x00\x01")
    (workspace / "latin.txt").write_bytes(b"needle caf\xe9\n")
    secret = tmp_path / "outside.txt"
    secret.write_text("needle outside\n")
    (workspace / "link.txt").symlink_to(secret)
    assert call(ctx, "search_files", pattern="needle").text == "latin.txt:1:needle caf\ufffd"


@pytest.mark.usefixtures("no_rg")
def test_search_caps_matches_and_long_lines(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "hits.txt").write_text("hit\n" * 250 + "hit" + "z" * 1000 + "\n")
    lines = call(ctx, "search_files", pattern="^hit", path="hits.txt").text.splitlines()
    assert len(lines) == 201
    assert lines[0] == "hits.txt:1:hit"
    assert lines[-1] == "… 51 more matches; narrow the pattern or path"
    (workspace / "long.txt").write_text("x" * 1000 + "\n")
    (line,) = call(ctx, "search_files", pattern="x", path="long.txt").text.splitlines()
    assert line == "long.txt:1:" + "x" * 300 + "…"


# Backtracks for days on a line of sixty a's and a b, in `re` and in `regex` (forty take `re` 90 s).
CATASTROPHIC = "(a|aa)+$"
SLOW_LINE = "a" * 60 + "b"


def test_a_catastrophic_regex_is_stopped_with_a_clear_error_in_search_files_and_recall(workspace: Path) -> None:
    """In a process of its own, so that a search that never ends shows as a timeout here
    rather than hanging the test run (`re` holds the GIL while it backtracks)."""
    (workspace / "slow.txt").write_text(f"fine\n{SLOW_LINE}\n")
    code = (
        "import json, sys; from pathlib import Path; from scribe.tools import search;"
        "from scribe.tools.base import ToolContext; from scribe.tools.registry import builtin_tools, run_tool;"
        "search.find_ripgrep = lambda: None;"  # the Python engine: ripgrep's is linear-time anyway
        f"log = [{{'seq': 3, 'type': 'user', 'text': {SLOW_LINE!r}}}];"
        "ctx = ToolContext(workspace=Path(sys.argv[1]), read_log=lambda: log, regex_timeout_s=0.3);"
        f"outs = [run_tool(builtin_tools(), name, {{key: {CATASTROPHIC!r}}}, ctx)"
        "        for name, key in (('search_files', 'pattern'), ('recall', 'query'))];"
        "print(json.dumps([(o.text, o.is_error) for o in outs]))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(workspace)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    stopped = (f"the regular expression {CATASTROPHIC!r} took more than 0.3 s of matching (regex_timeout_s) and "
               "was stopped; it likely backtracks without end (nested or overlapping repeats such as (a+)+ or "
               "(a|aa)+); write it more specifically")
    assert json.loads(done.stdout) == [[stopped, True], [stopped, True]]


# The test extra installs ripgrep into the environment's bin folder, which is on PATH only
# when the environment is activated.
RG_DIR = next((str(Path(p).parent) for p in (shutil.which("rg"), Path(sys.executable).parent / "rg")
               if p and Path(p).is_file()), None)


@pytest.mark.skipif(RG_DIR is None, reason="ripgrep not installed (the test extra installs it on x86_64 Linux)")
def test_ripgrep_and_fallback_agree(
    ctx: ToolContext, workspace: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{RG_DIR}{os.pathsep}{os.environ.get('PATH', '')}")
    assert search.find_ripgrep() is not None
    (workspace / "blob.bin").write_bytes(b"main\x00\x01")
    (workspace / "name:with:colons.txt").write_text("x = main\n")
    for name in ("a.b/x.txt", "a/y.txt"):  # tree order: a/ before a.b/
        (workspace / name).parent.mkdir()
        (workspace / name).write_text("main\n")
    cases = [("main|TODO", None), ("(?i)todo", "src"), ("zebra", None), ("main", "src/app.py")]
    with_rg = [call(ctx, "search_files", pattern=p, path=d).text for p, d in cases]
    request.getfixturevalue("no_rg")
    assert [call(ctx, "search_files", pattern=p, path=d).text for p, d in cases] == with_rg
