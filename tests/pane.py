"""A real terminal emulator for tests: one command in a tmux pane, on a tmux server of the test's
own (its own socket). tmux draws what a program writes the way a terminal does (prompt-toolkit
rewrites only the cells that change, so the raw bytes never hold a screen's whole text), and
`capture-pane` reads the screen back."""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class TmuxPane:
    def __init__(self, socket: Path) -> None:
        self.socket = socket
        self.status_file = socket.with_suffix(".status")

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, timeout=20)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self, command: str, width: int, height: int, cwd: Path | None = None) -> None:
        """Run `command` in a shell in a new pane. The pane stays when the command ends, so what it
        printed last can still be read; its exit status is written to a file by the shell that
        ran it, since tmux can take seconds to reap a child on a loaded machine."""
        where = ["-c", str(cwd)] if cwd is not None else []
        wrapped = f"{command}; echo $? > {shlex.quote(str(self.status_file))}"
        self.run("-f", "/dev/null", "start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
                 "new-session", "-d", "-x", str(width), "-y", str(height), *where, wrapped)
        self.run("set-option", "-g", "window-size", "manual")
        self.run("set-option", "-g", "history-limit", "10000")

    def start_program(self, argv: str, env: dict[str, str], cwd: Path, width: int = 100, height: int = 30) -> None:
        """Run `argv` (a shell word or words) with exactly the environment `env`, in `cwd`."""
        self.start(f"env -i {' '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())} {argv}", width, height, cwd)

    def prompt_ready(self, seconds: float = 30) -> None:
        """Wait for scribe's empty prompt: the last line above the bottom bar is `›` alone. (A
        line typed before the prompt is up was typed during the turn: it waits there unsent.)"""
        def ready() -> bool:
            lines = [line.rstrip() for line in self.screen().splitlines() if line.strip()]
            return len(lines) >= 2 and lines[-2] == "›"
        self._until(ready, seconds)

    def at_prompt(self, text: str, seconds: float = 30) -> str:
        """The screen once scribe's prompt holds `text` (a line of its own, not a question's end)."""
        self._until(lambda: any(line.startswith(f"› {text}") for line in self.screen().splitlines()), seconds)
        return self.screen()

    def _until(self, condition: Callable[[], bool], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"the pane never got there; it shows:\n{self.screen()}")
            time.sleep(0.1)

    def send(self, *keys: str) -> None:
        """Keys as tmux names them (Enter, Escape, C-z)."""
        self.run("send-keys", "-t", "0", *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "0", "-l", text)

    def typing(self, text: str, per_key_s: float = 0.15) -> None:
        """`text` typed one key at a time, as a person types (a newline is Enter, ESC is Esc).
        Each key is one short tmux call; on a loaded machine one takes up to a tenth of a second,
        so the gaps a test relies on are kept well apart from the ones scribe tells apart."""
        for char in text:
            if char == "\n":
                self.send("Enter")
            elif char == "\x1b":
                self.send("Escape")
            else:
                self.type(char)
            time.sleep(per_key_s)

    def keys(self, text: str, enter: bool = True) -> None:
        """Text typed, then Enter unless told not to."""
        self.type(text)
        if enter:
            self.send("Enter")

    def resize(self, width: int) -> None:
        self.run("resize-window", "-x", str(width))

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "0")

    def scrollback(self) -> str:
        """Everything the pane holds, scrollback too, wrapped lines joined as they were written."""
        return self.run("capture-pane", "-p", "-J", "-S", "-", "-t", "0")

    def wait(self, text: str, seconds: float = 30, whole: bool = False) -> str:
        """The screen (or with `whole`, the scrollback) once it shows `text`."""
        deadline = time.monotonic() + seconds
        while True:
            shown = self.scrollback() if whole else self.screen()
            if text in shown:
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the pane shows:\n{shown}")
            time.sleep(0.1)

    def exit_status(self) -> int | None:
        """The command's exit status once it has ended, else None."""
        written = self.status_file.read_text() if self.status_file.exists() else ""
        return int(written) if written.endswith("\n") else None

    def stop(self) -> None:
        subprocess.run(["tmux", "-S", str(self.socket), "kill-server"], capture_output=True, timeout=20)
