"""A Python that lives in the real /tmp, run in the sandbox's private one (bubblewrap is installed
here and by .ci/run): a venv made under /tmp, as a clone and its venv are on many CI machines,
and what sandboxed programs started from it see of /tmp."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from scribe.tools.base import ToolContext
from scribe.tools.registry import builtin_tools, run_tool
from scribe.workspace.git.folders import command_protection
from scribe.workspace.sandbox.runtime import interpreter_folders, outermost, program_needs

SANDBOXED = command_protection(Path("/")).sandboxed
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason="bubblewrap cannot create namespaces here")


@pytest.fixture
def in_tmp() -> Iterator[Path]:
    """A folder of this test's own in the real /tmp (wherever TMPDIR points pytest's own)."""
    folder = Path(tempfile.mkdtemp(prefix="scribe-runtime-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def tmp_venv(in_tmp: Path) -> Path:
    """A real venv under /tmp (no pip: nothing is fetched), made from the tests' own Python."""
    folder = in_tmp / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    return folder


def make_server(folder: Path) -> Path:
    """A script beside a module of its own, as an MCP server's folder holds them."""
    folder.mkdir()
    (folder / "neighbour.py").write_text("WORD = 'found beside the script'\n")
    script = folder / "serve.py"
    script.write_text("import os, sys\nimport neighbour\n"
                      "print(sys.prefix)\nprint(neighbour.WORD)\n"
                      "print(os.path.exists(os.environ['ELSEWHERE']))\n"
                      "try:\n    open(os.path.join(sys.prefix, 'planted'), 'w')\n"
                      "except OSError as exc:\n    print(exc.strerror)\n")
    return script


@needs_sandbox
def test_a_server_from_a_venv_under_tmp_starts_and_sees_its_script_folder_read_only(
        workspace: Path, in_tmp: Path, tmp_venv: Path) -> None:
    script = make_server(in_tmp / "server")
    elsewhere = in_tmp / "unrelated.txt"
    elsewhere.write_text("not named by the command line\n")
    python = tmp_venv / "bin" / "python"
    argv = command_protection(workspace).wrap([str(python), str(script)], str(workspace))
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                         env={"PATH": "/usr/bin:/bin", "ELSEWHERE": str(elsewhere)})
    assert ran.returncode == 0, ran.stderr
    prefix, word, seen, write = ran.stdout.splitlines()
    assert prefix == str(tmp_venv) and word == "found beside the script"
    # the folders it needs, alone: the rest of the real /tmp stays out of sight
    assert seen == "False"
    assert write == "Read-only file system"
    assert not (tmp_venv / "planted").exists()


@needs_sandbox
def test_a_command_runs_the_venv_python_scribe_runs_on_when_it_lives_under_tmp(
        workspace: Path, tmp_venv: Path) -> None:
    python = tmp_venv / "bin" / "python"
    runtime = interpreter_folders(tmp_venv, Path(sys.base_prefix), python)
    protection = dataclasses.replace(command_protection(workspace), runtime=runtime)
    ctx = ToolContext(workspace=workspace, protection=protection)
    out = run_tool(builtin_tools(), "run_command",
                   {"command": f"{python} -c 'import sys; print(sys.prefix)'; ls /tmp"}, ctx)
    assert out.exit_code == 0, out.text
    prefix, *listed = out.text.splitlines()
    assert prefix == str(tmp_venv)
    # the folder on the way to the venv, and the workspace's where it lies in /tmp too; nothing else
    tops = {tmp_venv.relative_to("/tmp").parts[0]}
    if workspace.resolve().is_relative_to("/tmp"):
        tops.add(workspace.resolve().relative_to("/tmp").parts[0])
    assert set(listed) == tops
    assert protection.record()["tmp_read_only"] == [str(tmp_venv)]
    assert f"the Python scribe runs on: {tmp_venv}" in protection.lines()[1]


def test_the_venv_its_base_and_its_editable_sources_are_found_wherever_they_are(in_tmp: Path) -> None:
    base = in_tmp / "base"
    (base / "bin").mkdir(parents=True)
    (base / "bin" / "python3.11").write_text("")
    (base / "bin" / "python3.11").chmod(0o755)
    env = in_tmp / "project" / ".venv"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\ninclude-system-site-packages = false\n")
    (env / "bin" / "python").symlink_to(base / "bin" / "python3.11")
    source = in_tmp / "project" / "src"
    source.mkdir()
    record = env / "lib" / "python3.11" / "site-packages" / "project-1.0.dist-info" / "direct_url.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"url": source.as_uri(), "dir_info": {"editable": True}}))

    assert interpreter_folders(env, base, env / "bin" / "python") == (str(base), str(env), str(source))
    script = in_tmp / "tools" / "serve.py"
    script.parent.mkdir()
    script.write_text("")
    needs = program_needs([str(env / "bin" / "python"), str(script), "--verbose", "--config=nothing-there"],
                          str(in_tmp))
    assert needs == (str(base), str(env), str(script.parent))
    # found on PATH as well, and a relative script from the program's working folder
    assert program_needs(["python", "tools/serve.py"], str(in_tmp), str(env / "bin")) == needs


def test_never_the_whole_tmp_and_nothing_outside_it() -> None:
    assert outermost([Path("/tmp"), Path("/usr"), Path("/")]) == ()
    assert program_needs(["/bin/sh", "/etc/hostname"], "/") == ()
