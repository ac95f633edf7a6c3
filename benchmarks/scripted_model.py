"""A deterministic stand-in for the model behind the fake API: agent replies come from the
session's script; observer and reflector answers are computed from their input the way a
careful summariser would compress it (one short line per event, exact tokens kept)."""

from __future__ import annotations

import re
from typing import Any

from scribe.fakeapi import Reply
from scribe.memory.observer import OBSERVER_SYSTEM
from scribe.memory.reflector import REFLECTOR_SYSTEM

from .sessions import ScriptedSession

_EVENT = re.compile(r"^\[seq (\d+)\] ([^:]+):\s?(.*)$")


class ScriptedModel:
    def __init__(self, session: ScriptedSession) -> None:
        self.replies = [reply for turn in session.turns for reply in turn.replies]
        self.calls = {"agent": 0, "observer": 0, "reflector": 0}

    def __call__(self, request: dict[str, Any]) -> Reply:
        system = request["system"][0]["text"] if isinstance(request.get("system"), list) else ""
        if system == OBSERVER_SYSTEM:
            self.calls["observer"] += 1
            return Reply.text(observe(request["messages"][0]["content"][0]["text"]))
        if system == REFLECTOR_SYSTEM:
            self.calls["reflector"] += 1
            return Reply.text(reflect(request["messages"][0]["content"][0]["text"]))
        self.calls["agent"] += 1
        return self.replies.pop(0) if self.replies else Reply.text("(end of script)")


def observe(prompt: str) -> str:
    """One tagged line per event: the user's words whole (they carry goals and facts), the first
    line of everything else (for a tool result, the first line it printed), and its seq."""
    events = prompt.split("Events to observe", 1)[1].splitlines()[1:]
    lines: list[str] = []
    current = ""
    for n, raw in enumerate(events):
        match = _EVENT.match(raw)
        if not match:
            continue
        seq, who, text = match.groups()
        text = text.strip()[:160]
        if who == "user":
            lines.append(f"🔴 User (seq {seq}): {text}")
            current = text[:80]
        elif who == "assistant":
            lines.append(f"🟡 Agent (seq {seq}): {text}")
        else:
            shown = events[n + 1].strip()[:120] if n + 1 < len(events) and not _EVENT.match(events[n + 1]) else ""
            lines.append(f"🟡 {who} (seq {seq}): {shown or 'no output'}")
    lines += [f"Current task: {current or 'continuing'}", "Next step: continue with the user's request"]
    return "\n".join(lines)


def reflect(prompt: str) -> str:
    """Keep every 🔴 line, fold the 🟡 lines to one per seq range, keep the last task lines."""
    body = prompt.split("\n\n", 1)[1]
    red = [line for line in body.splitlines() if line.startswith("🔴")]
    yellow = [line for line in body.splitlines() if line.startswith("🟡")]
    tasks = [line for line in body.splitlines() if line.startswith(("Current task", "Next step"))][-2:]
    summary = []
    if yellow:
        seqs = [int(s) for line in yellow for s in re.findall(r"seq (\d+)", line)]
        span = f"seq {min(seqs)}-{max(seqs)}" if seqs else "earlier"
        summary = [f"✅ {len(yellow)} tool steps done ({span}); recall for details"]
    return "\n".join(red + summary + tasks)
