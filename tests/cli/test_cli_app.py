"""The top-level command: its list of commands is each command's own help, and `scribe --help`
imports no command's module (start-up time is what a person pays on every call)."""

from __future__ import annotations

import subprocess
import sys

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
