"""The config files that apply are read once per command: settings, price tables and MCP servers
all come from the same bytes, the ones trust was decided on. Watched from inside the real
command with an audit hook, which sees every `open` the process makes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from helpers import scribe_env, trust
from scribe.fakeapi import FakeMessagesServer, Reply

# `scribe ARGS` in this interpreter, with every open of a config file written to a list.
WATCHED = """
import json, sys
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].endswith(("config.toml", ".mcp.json")):
        opened.append(args[0])
sys.addaudithook(hook)
from scribe.cli.app import main
sys.argv = ["scribe", *sys.argv[2:]]
try:
    main()
finally:
    with open(OPENED, "w") as out:
        json.dump(opened, out)
"""


def opens_of(args: list[str], cwd: Path, env: dict[str, str], record: Path) -> Counter[str]:
    code = WATCHED.replace("OPENED", repr(str(record)))
    done = subprocess.run([sys.executable, "-c", code, "scribe", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return Counter(json.loads(record.read_text()))


def test_each_config_file_is_read_once_by_a_run(workspace: Path, home: Path, tmp_path: Path) -> None:
    user = home / ".config" / "scribe" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("max_tokens = 3000\n[prices.local]\ninput = 1.0\noutput = 2.0\n")
    own = workspace / ".scribe" / "config.toml"
    own.parent.mkdir()
    own.write_text("max_tokens = 2000\n[mcp.servers]\n")
    (workspace / ".mcp.json").write_text('{"mcpServers": {}}')
    trust(workspace, home)
    with FakeMessagesServer([Reply.text("hi")]) as server:
        opened = opens_of(["run", "-m", "local", "hello"], workspace, scribe_env(server.base_url, home),
                          tmp_path / "opened.json")
    assert opened == {str(user): 1, str(own): 1, str(workspace / ".mcp.json"): 1}
