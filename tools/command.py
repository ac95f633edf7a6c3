"""run_command: one bash command in the workspace, in its own process group, with bounded
time and bounded memory. It owns the rules for killing what a command leaves behind and for
keeping secrets out of the command's environment."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from typing import Any

from scribe.tools.base import CommandInterrupted, ToolContext, ToolError, ToolKind, ToolOutput
from scribe.tools.textio import human_bytes

MAX_TIMEOUT_S = 1800.0
# After SIGTERM, how long the group gets before SIGKILL.
TERM_GRACE_S = 1.0
# After SIGKILL, how long to keep draining: a process that escaped the group (setsid) may
# still hold the pipe, and must not hang the tool.
DRAIN_GRACE_S = 0.5
# After bash itself exits, how long background jobs still writing to our pipe may finish
# before the group is killed. Jobs that redirected their output are left running.
ORPHAN_GRACE_S = 0.5
_READ_CHUNK = 65536
_POLL_S = 0.05
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def command_env() -> dict[str, str]:
    """The parent's environment minus anything that looks like a secret, plus scribe's markers."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.upper().startswith("ANTHROPIC_")
        and not any(marker in name.upper() for marker in _SECRET_MARKERS)
    }
    env.update(SCRIBE="1", PAGER="cat", GIT_PAGER="cat", GIT_TERMINAL_PROMPT="0")
    return env


class _CappedOutput:
    """Keeps the first and last halves of `cap` bytes and counts what falls in between."""

    def __init__(self, cap: int) -> None:
        self.head_cap = max(cap, 0) // 2
        self.tail_cap = max(cap, 0) - self.head_cap
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_len += len(chunk)
        # Drop whole chunks only while the rest still covers the tail, so memory stays ~cap.
        while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_cap:
            self.tail_len -= len(self.tail.popleft())

    def render(self) -> tuple[str, int]:
        tail = b"".join(self.tail)[-self.tail_cap :] if self.tail_cap else b""
        dropped = self.total - len(self.head) - len(tail)
        head_text = self.head.decode("utf-8", errors="replace")
        tail_text = tail.decode("utf-8", errors="replace")
        if dropped <= 0:
            return head_text + tail_text, 0
        sep = "" if head_text.endswith("\n") or not head_text else "\n"
        return f"{head_text}{sep}[… {human_bytes(dropped)} of output dropped …]\n{tail_text}", dropped


class _Running:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.cancelled = threading.Event()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


class RunCommand:
    name = "run_command"
    kind: ToolKind = "command"
    description = (
        "Run a bash command in the workspace root; returns stdout and stderr combined. No stdin and no "
        "terminal, so use non-interactive flags. The whole process group is killed after timeout_s "
        "seconds (default from config, max 1800). Background jobs must redirect their output or they are "
        "killed when the command ends. Very long output is cut in the middle."
    )

    def __init__(self) -> None:
        # Built per instance: a class-level dict would be shared, mutable state.
        self.input_schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command line to run."},
                "timeout_s": {"type": "number", "description": "Seconds before the command is killed."},
            },
            "required": ["command"],
            "additionalProperties": False,
        }
        # Runs in progress, keyed by id. A plain dict, not a lock: cancel() may be called from a
        # signal handler that interrupted run() on the same thread.
        self._running: dict[int, _Running] = {}

    def summary(self, args: dict[str, Any]) -> str:
        command = str(args.get("command", "")).strip()
        first = command.splitlines()[0] if command else ""
        if len(first) > 120:
            return first[:119] + "…"
        return first + " …" if "\n" in command else first

    def cancel(self) -> bool:
        """Kill the running command's process group (safe from another thread or a signal
        handler). Returns whether anything was running."""
        runs = list(self._running.values())
        for run in runs:
            run.cancelled.set()
            _signal_group(run.proc.pid, signal.SIGTERM)
        return bool(runs)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        command: str = args["command"]
        if not command.strip():
            raise ToolError("command is empty")
        timeout = float(args.get("timeout_s", ctx.command_timeout_s))
        if timeout <= 0:
            raise ToolError("timeout_s must be a positive number of seconds")
        timeout = min(timeout, MAX_TIMEOUT_S)
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=ctx.workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so one killpg reaches every child
            env=command_env(),
        )
        run = _Running(proc)
        self._running[id(run)] = run
        output = _CappedOutput(ctx.output_cap_bytes)
        try:
            reason = _pump(run, output, timeout)
        except KeyboardInterrupt:
            _signal_group(proc.pid, signal.SIGKILL)  # leave nothing behind, keep what it printed
            raise CommandInterrupted(_result(proc, "cancelled", timeout, output)) from None
        except BaseException:
            _signal_group(proc.pid, signal.SIGKILL)
            raise
        finally:
            self._running.pop(id(run), None)
            assert proc.stdout is not None
            proc.stdout.close()
        return _result(proc, reason, timeout, output)


def _pump(run: _Running, output: _CappedOutput, timeout: float) -> str | None:
    """Read output until the pipe closes and bash has exited, enforcing timeout and cancel.
    Returns why the group was killed ("timeout", "cancelled", "orphans"), or None."""
    proc = run.proc
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    reason: str | None = None
    killed_at = 0.0
    hard_killed = False
    exited_at: float | None = None
    eof = False
    try:
        while not (eof and exited_at is not None):
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if reason is None:
                if run.cancelled.is_set():
                    reason = "cancelled"
                elif now >= deadline:
                    reason = "timeout"
                elif exited_at is not None and not eof and now - exited_at >= ORPHAN_GRACE_S:
                    reason = "orphans"
                if reason is not None:
                    killed_at = now
                    _signal_group(proc.pid, signal.SIGTERM)
            elif not hard_killed and now - killed_at >= TERM_GRACE_S:
                hard_killed = True
                _signal_group(proc.pid, signal.SIGKILL)
            elif hard_killed and now - killed_at >= TERM_GRACE_S + DRAIN_GRACE_S:
                break  # whatever still holds the pipe escaped the group; stop waiting for it
            if eof:
                time.sleep(_POLL_S)  # bash closed its output but is still running
                continue
            for _key, _events in selector.select(timeout=_POLL_S):
                try:
                    chunk = os.read(fd, _READ_CHUNK)
                except BlockingIOError:
                    continue
                if chunk:
                    output.add(chunk)
                else:
                    eof = True
                    selector.unregister(fd)
    finally:
        selector.close()
    return reason


def _result(
    proc: subprocess.Popen[bytes], reason: str | None, timeout: float, output: _CappedOutput
) -> ToolOutput:
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    code = proc.returncode
    signal_name = ""
    if code < 0:  # killed by a signal: report it the way a shell would
        try:
            signal_name = signal.Signals(-code).name
        except ValueError:
            pass
        code = 128 - code
    text, dropped = output.render()
    notes: list[str] = []
    if reason == "timeout":
        notes.append(f"[timed out after {timeout:g}s; process group killed]")
    elif reason == "cancelled":
        notes.append("[cancelled; process group killed]")
    else:
        if reason == "orphans":
            notes.append(
                "[background jobs still holding the output were killed; "
                "redirect their output (cmd > file 2>&1 &) to keep them running]"
            )
        if code != 0:
            notes.append(f"[exit code {code} ({signal_name})]" if signal_name else f"[exit code {code}]")
    if notes:
        text = text + ("\n" if text and not text.endswith("\n") else "") + "\n".join(notes)
    elif not text:
        text = "(no output)"
    is_error = reason in ("timeout", "cancelled") or code != 0
    return ToolOutput(text=text, is_error=is_error, exit_code=code, dropped_bytes=dropped)
