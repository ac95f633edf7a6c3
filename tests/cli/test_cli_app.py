"""The top-level command: its list of commands is each command's own help, and `scribe --help`
imports no command's module (start-up time is what a person pays on every call)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scribe.cli.app import COMMANDS, load_command


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_listed_help_is_the_commands_own(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    first = " ".join((command.help or "").split("\n\n")[0].split())
    assert COMMANDS[name].summary == first


def test_top_level_help_imports_no_command() -> None:
    code = ("import sys\n"
            "from scribe.cli.app import app\n"
            "try:\n"
            "    app(['--help'], prog_name='scribe')\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('scribe.') and m not in ('scribe.cli', 'scribe.cli.app', 'scribe.cli.lazy')),"
            " file=sys.stderr)\n")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "Commands:" in ran.stdout and "  mcp " in ran.stdout
    assert ran.stderr.strip() == "[]"


def test_a_command_runs_after_its_lazy_load() -> None:
    ran = subprocess.run([sys.executable, "-m", "scribe", "log", "list", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 0 and "scribe log list [OPTIONS]" in ran.stdout


def test_scribe_alone_opens_the_repl_with_the_options_typer_would_give(monkeypatch: pytest.MonkeyPatch) -> None:
    """`scribe` with no argument skips typer's parsing (main()); it must open the REPL exactly as
    the parsed command would."""
    from typer.testing import CliRunner

    from scribe.cli import app as cli

    opened: list[dict[str, object]] = []
    monkeypatch.setattr(cli, "open_repl", lambda **options: opened.append(options))
    monkeypatch.setattr(sys, "argv", ["scribe"])
    cli.main()
    assert CliRunner().invoke(cli.app, []).exit_code == 0
    assert len(opened) == 2 and opened[0] == opened[1]


def test_scribe_alone_without_a_terminal_says_so() -> None:
    ran = subprocess.run([str(Path(sys.executable).parent / "scribe")], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2 and "no terminal here" in ran.stderr and "Traceback" not in ran.stderr
