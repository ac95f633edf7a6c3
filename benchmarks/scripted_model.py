"""A deterministic stand-in for the model behind the fake API.

Agent replies come from the session's script, except at the probe (the last turn), where the
model answers from what it sees: a fact in its prompt it states; a fact not in view it looks for
with one `recall` call per fact (the query is the fact's cue, words a person would search for),
and states only what the recall answers really contain.

Side calls are answered from their input the way a careful, terse summariser would (nothing here
knows which facts are planted):
- observer: one tagged line per event: the person's words a line per sentence (🔴: they carry
  goals, decisions and constraints; six sentences at most), the agent's first 160 characters, for a tool result
  its first output line, and for a failed one also the line that says why (error text is kept
  as written, as the observer's instructions ask); then the current task and next step.
- reflector: keeps every 🔴 line and the task lines, folds the 🟡 lines into one ✅ line per
  condensed span (so details only tool results showed must come back through recall).
- curator: the existing entries, then each new fact line as a sourced bullet, cut to budget.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from scribe.fakeapi import Reply, side_call_body, side_call_kind, text_block, tool_use_block
from scribe.memory.notes import CURATOR_SYSTEM

from .bills import prompt_text
from .sessions import PROBE, ScriptedSession

_EVENT = re.compile(r"^\[seq (\d+)\] ([^:]+):\s?(.*)$")
_WHY = re.compile(r"error|failed|exception|traceback|mismatch", re.IGNORECASE)
_CURATOR_HEAD = CURATOR_SYSTEM.split("{budget}", 1)[0]


class ScriptedModel:
    def __init__(self, session: ScriptedSession) -> None:
        self.session = session
        self.replies = [reply for turn in session.turns for reply in turn.replies]
        self.calls = {"agent": 0, "observer": 0, "reflector": 0, "curator": 0}
        self.probe_answer = ""
        self.probe_recalls: list[str] = []  # the queries it sent
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Reply:
        system = request["system"][0]["text"] if isinstance(request.get("system"), list) else ""
        kind = side_call_kind(request)  # by its instructions, on either route (memory/routes.py)
        with self._lock:
            if kind == "observer":
                self.calls["observer"] += 1
                return Reply.text(observe(side_call_body(request)))
            if kind == "reflector":
                self.calls["reflector"] += 1
                return Reply.text(reflect(side_call_body(request)))
            if system.startswith(_CURATOR_HEAD):
                first = request["messages"][0]["content"][0]
                self.calls["curator"] += 1
                return Reply.text(curate(first["text"] if isinstance(first, dict) else ""))
            self.calls["agent"] += 1
            is_probe, recalled = _probe_state(request)
            if is_probe:
                return self._answer_probe(request, recalled)
            return self.replies.pop(0) if self.replies else Reply.text("(end of script)")

    def _answer_probe(self, request: dict[str, Any], recalled: list[str] | None) -> Reply:
        facts = self.session.facts
        seen = prompt_text(request)  # what it was shown before the question
        if recalled is None:  # first call of the probe turn
            missing = [f for f in facts if f.text not in seen]
            if missing:
                self.probe_recalls = [f.cue for f in missing]
                return Reply([tool_use_block("recall", {"query": f.cue}) for f in missing])
            known = [f.text for f in facts]
        else:
            answers = "\n".join(recalled)
            known = [f.text for f in facts if f.text in seen or f.text in answers]
        self.probe_answer = "From what I have: " + "; ".join(known) + "."
        return Reply([text_block(self.probe_answer)])


def _probe_state(request: dict[str, Any]) -> tuple[bool, list[str] | None]:
    """(is this a call of the probe turn, the recall answers after the probe's question: None
    on its first call)."""
    messages = request["messages"]
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        texts = [b.get("text") for b in m["content"] if b.get("type") == "text"] if m["role"] == "user" else []
        if texts and PROBE not in texts:
            return False, None  # a later question than the probe: the turn being answered is that one
        if PROBE in texts:
            after = messages[i + 1:]
            if not after:
                return True, None
            return True, [str(b.get("content", "")) for later in after if later["role"] == "user"
                          for b in later["content"] if b.get("type") == "tool_result"]
    return False, None


def observe(prompt: str) -> str:
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
            # The person's words carry goals, decisions and constraints: one line per sentence.
            said = [p.strip() for p in re.split(r"(?<=[.?!])\s+", match.group(3).strip()) if p.strip()]
            lines += [f"🔴 User (seq {seq}): {sentence[:200]}" for sentence in said[:6]]
            current = text[:80]
        elif who == "assistant":
            lines.append(f"🟡 Agent (seq {seq}): {text}")
        else:
            body = []
            for line in events[n + 1:]:
                if _EVENT.match(line):
                    break
                body.append(line.strip())
            shown = next((b for b in body if b), "")[:120]
            failed = "error" in who or "exit" in who
            why = next((b for b in body if _WHY.search(b) and b[:120] != shown), "")[:160] if failed else ""
            lines.append(f"🟡 {who} (seq {seq}): {shown or 'no output'}" + (f" — {why}" if why else ""))
    lines += [f"Current task: {current or 'continuing'}", "Next step: continue with the user's request"]
    return "\n".join(lines)


def reflect(prompt: str) -> str:
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


_SOURCED = re.compile(r"^\[([\w-]+)#(\d+)\] (.*)$")


def curate(prompt: str) -> str:
    existing = [line for line in prompt.split("What session", 1)[0].splitlines() if line.startswith("- ")]
    new = []
    for line in prompt.splitlines():
        match = _SOURCED.match(line)
        if match:
            sid, seq, text = match.groups()
            new.append(f"- {text[:200]} [from {sid}#{seq}]")
    seen: set[str] = set()
    merged = [e for e in existing + new if not (e in seen or seen.add(e))]  # type: ignore[func-returns-value]
    return "\n".join(merged)
