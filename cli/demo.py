"""`scribe demo`: the whole stack offline. A scripted model (served by the project's fake
Messages API, with its prompt-cache accounting) drives real tools in a temporary git repository,
through the real SDK, loop, log and renderer, shown as the REPL shows a turn (tool output and
diffs included). The repository is removed at the end, Ctrl-C included, unless --keep."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .exits import EXIT_INTERRUPTED

if TYPE_CHECKING:
    from scribe.fakeapi.script import ScriptItem

# The scripted model takes a moment per answer, as a real one does: the demo reads as a session.
PACE_S = 0.3

GREET = 'def greet(name: str) -> str:\n    return f"Hello, {name}"\n'
CHECK = "python3 -c 'from greet import greet; print(greet(\"Ada\"))'"

PROMPTS = [
    "Create greet.py with a greet(name) function, check that it works, then make the greeting friendlier.",
    "Which files does the repository have now?",
]


def _script() -> list[ScriptItem]:
    from scribe.fakeapi import Reply, text_block, tool_use_block

    return [
        Reply([text_block("I'll create greet.py first."),
               tool_use_block("write_file", {"path": "greet.py", "content": GREET})]),
        Reply([text_block("Now a quick check that it runs."), tool_use_block("run_command", {"command": CHECK})]),
        Reply([text_block("It prints the greeting. Reading it back before the edit."),
               tool_use_block("read_file", {"path": "greet.py"})]),
        Reply([tool_use_block("edit_file", {"path": "greet.py", "old_text": 'return f"Hello, {name}"',
                                            "new_text": 'return f"Hello, {name}! Good to see you."'})]),
        Reply([tool_use_block("run_command", {"command": CHECK})]),
        Reply([text_block("Done. greet.py defines greet(name), which now answers "
                          "\"Hello, Ada! Good to see you.\"; I ran it to check.")]),
        Reply([tool_use_block("list_files", {})]),
        Reply([text_block("The repository has README.md and greet.py.")]),
    ]


def _paced(replies: list[Any], seconds: float) -> Callable[[dict[str, Any]], Any]:
    items = iter(replies)

    def answer(request: dict[str, Any]) -> Any:
        time.sleep(seconds)
        return next(items)
    return answer


def demo(
    keep: Annotated[bool, typer.Option(help="Keep the temporary repository, to look at with `scribe log`.")] = False,
) -> None:
    """Run a short scripted session offline: no API key, no network.

    The model is scripted; everything else is real: tools act on a temporary git repository,
    every event goes to the log, requests go through the official SDK to a local fake API that
    accounts for the prompt cache like the real one. The repository is removed when the demo
    ends (or is interrupted), unless --keep.
    """
    workspace = Path(tempfile.mkdtemp(prefix="scribe-demo-")).resolve()
    try:
        _run(workspace, keep)
    except KeyboardInterrupt:
        print("\nscribe demo: interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        if not keep:
            shutil.rmtree(workspace, ignore_errors=True)


def _run(workspace: Path, keep: bool) -> None:
    from scribe.agent.config import AgentConfig
    from scribe.agent.core import Agent
    from scribe.agent.protocol import SessionOpened, TurnEnded, UserMessage
    from scribe.context.stats import figures_of
    from scribe.fakeapi import FakeMessagesServer
    from scribe.settings.values import PermissionMode, Settings

    from .repl.view import View, make_console

    _init_repo(workspace)
    print("scribe demo: the model here is SCRIPTED (a local fake API); tools, log and cache accounting are real.")
    print(f"workspace: {workspace}\n")
    view = View(make_console())
    with FakeMessagesServer(_paced(_script(), PACE_S)) as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url
        os.environ.setdefault("ANTHROPIC_API_KEY", "scribe-demo-no-key-needed")
        # The demo's own settings, whatever the person's config says: no notes, no MCP servers.
        config = AgentConfig(workspace, settings=Settings(permission_mode=PermissionMode.FULL_AUTO, max_retries=0,
                                                          curate_notes=False), servers=False)
        with Agent(config) as agent:
            for event in agent.start():
                if not isinstance(event, SessionOpened):
                    view.handle(event)
            session = agent.session
            try:
                for prompt in PROMPTS:
                    print(f"> {prompt}", flush=True)
                    for event in agent.run(UserMessage(prompt)):
                        view.handle(event)
                        if isinstance(event, TurnEnded) and event.reason == "interrupted":
                            raise KeyboardInterrupt  # the agent recorded it; the demo stops here
                    print()
            finally:
                view.pause()
        rejected = [r for r in server.requests if r.error]
    totals = figures_of(session.events)
    later = figures_of(session.events, skip_first=1)
    print(f"log:       {session.path}")
    print(f"requests:  {totals.calls} ({len(rejected)} rejected by the API's checks)")
    t = totals.tokens
    print(f"tokens:    {totals.prompt_tokens} prompt ({t.cache_read} cache read, {t.cache_write} cache write, "
          f"{t.input} uncached), {t.output} output")
    print(f"cache:     {later.hit_rate:.0%} of prompt tokens read from the cache from the second request on")
    if keep:
        print(f"inspect:   cd {workspace} && scribe log show")
    else:
        print("inspect:   the demo's repository is removed now; `scribe demo --keep` keeps it for `scribe log show`")


def _init_repo(path: Path) -> None:
    from scribe.workspace.git.folders import command_protection
    from scribe.workspace.git.run import run_git

    box = command_protection(path)  # git writes the new repository as a command would, sandboxed

    def git(*args: str) -> None:
        done = run_git(path, *args, box=box, writes=True)
        if done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)

    git("init", "-q")
    git("config", "user.email", "demo@scribe.invalid")
    git("config", "user.name", "scribe demo")
    (path / "README.md").write_text("# demo\n")
    git("add", "README.md")
    git("commit", "-q", "-m", "initial")
