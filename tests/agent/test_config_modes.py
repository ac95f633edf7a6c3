"""`scribe config` says truthfully which permission mode each front end starts in."""

from __future__ import annotations

from pathlib import Path

from helpers import run_scribe, scribe_env


def test_config_names_the_mode_of_the_repl_and_of_run(workspace: Path, home: Path) -> None:
    env = scribe_env("http://127.0.0.1:9", home)
    shown = run_scribe(["config"], workspace, env)
    assert shown.code == 0, shown.err
    [line] = [line for line in shown.out.splitlines() if line.startswith("permission_mode")]
    assert "ask (REPL), accept-edits (scribe run)" in line and line.rstrip().endswith("default")
    as_json = run_scribe(["config", "--json"], workspace, env).json()["permission_mode"]
    assert as_json["by_front_end"] == {"repl": "ask", "run": "accept-edits"}

    asked = run_scribe(["config", "--json"], workspace, {**env, "SCRIBE_PERMISSION_MODE": "ask"}).json()
    assert asked["permission_mode"]["by_front_end"] == {"repl": "ask", "run": "accept-edits"}  # run cannot ask
    auto = run_scribe(["config"], workspace, {**env, "SCRIBE_PERMISSION_MODE": "full-auto"})
    [line] = [line for line in auto.out.splitlines() if line.startswith("permission_mode")]
    assert "full-auto " in line and "REPL" not in line
