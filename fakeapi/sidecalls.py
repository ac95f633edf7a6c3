"""`SideCallModel`: a fake model that answers scribe's memory side calls from their input, in a
chosen habit (habits.py), and the agent's own calls from a script.

What it says is computed from what it is shown, the way a careful summariser would: one line per
event for the observer (the person's words as 🔴, tool activity as 🟡), the 🔴 lines kept and the
rest folded into one ✅ line for the reflector, and the existing notes plus one entry per fact for
the curator. The habit only changes how that is written, so a test can run the same session with
two habits and compare what scribe kept.
"""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from . import forced
from . import habits as catalogue
from .habits import Entry, Said
from .script import Reply, Responder, ScriptItem
from .stretch import side_call_body, side_call_kind

__all__ = ["SideCallModel", "side_call_kind"]

_EVENT = re.compile(r"^\[seq (\d+)\] ([^:]+?)(?: result \(([^)]*)\))?:\s?(.*)$")
_FACT = re.compile(r"^\[([\w-]+#\d+)\] (.*)$")
_NOTE = re.compile(r"^- (.*?)(?: \[from ([\w-]+#\d+)\])?$")
# The curator keeps at most this many new entries per call, the newest, so the notes stay short.
NEW_ENTRIES = 30


class SideCallModel:
    """A responder for FakeMessagesServer. `habit` applies to every side call unless `observer`,
    `reflector` or `curator` names another for that kind; `calls` counts requests by kind.

    `tools` is how a side call that forces a tool is answered (forced.py): "ignore" (the
    default) is a server that drops tools, so the text habit answers; "honour" answers with the
    tool's input, "malformed" with input that does not fit it. `tools_for` sets it per kind."""

    def __init__(self, agent: Sequence[ScriptItem] | Responder | None = None, *, habit: str = "canonical",
                 observer: str | None = None, reflector: str | None = None, curator: str | None = None,
                 seed: int = 0, tools: str = "ignore", tools_for: dict[str, str] | None = None) -> None:
        self._agent = agent if callable(agent) else list(agent or [])
        self.habits = {"observer": observer or habit, "reflector": reflector or habit, "curator": curator or habit}
        for name in self.habits.values():
            catalogue.habit(name)  # an unknown name fails here, not at the first side call
        self.tools = {kind: (tools_for or {}).get(kind, tools) for kind in self.habits}
        for name in self.tools.values():
            if name not in forced.TOOL_HABITS:
                raise ValueError(f"unknown tool habit {name!r}; known: {', '.join(forced.TOOL_HABITS)}")
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()

    def __call__(self, request: dict[str, Any]) -> ScriptItem:
        kind = side_call_kind(request)
        with self._lock:
            self.calls[kind] += 1
            if kind == "agent":
                return self._agent_reply(request)
            body = side_call_body(request)
            chosen = catalogue.habit(self.habits[kind])
            tool = forced.forced_tool(request)
            answers_tool = tool is not None and self.tools[kind] != "ignore"
            if kind == "curator":
                entries = curated_entries(body)
                if tool is not None and answers_tool:
                    return forced.notes_reply(tool, entries, self.tools[kind])
                return chosen.curate(entries, self._rng)
            said = observed(body) if kind == "observer" else reflected(body)
            if tool is not None and answers_tool:
                return forced.observations_reply(tool, said, self.tools[kind])
            return chosen.observe(said, self._rng)

    def _agent_reply(self, request: dict[str, Any]) -> ScriptItem:
        if callable(self._agent):
            return self._agent(request)
        return self._agent.pop(0) if self._agent else Reply.text("Done.")


def observed(body: str) -> Said:
    """What a terse model keeps of the events shown: the person's words (a message's first 160
    characters; a run of requests that begin alike, as one line naming their seqs), the first
    line of a tool's output, the agent's words when they say more than an acknowledgement."""
    events = body.split("Events to observe", 1)[-1].splitlines()[1:]
    lines: list[tuple[str, str]] = []
    task = None
    run: list[str] = []  # seqs of a run of alike requests
    run_head = ""
    for n, raw in enumerate(events):
        match = _EVENT.match(raw)
        if not match:
            continue
        seq, who, status, text = match.groups()
        text = " ".join(text.split())[:160]
        if who == "user":
            head = " ".join(text.split()[:1])
            if run and head == run_head:
                run.append(seq)
                lines[-1] = ("🔴", f"User asked {len(run)} times alike (seq {run[0]}-{seq}), e.g.: {lines[-1][1].split(': ', 1)[-1]}")
                continue
            run, run_head = [seq], head
            lines.append(("🔴", f"User asked (seq {seq}): {text}"))
            task = text[:80] or task
        elif status is not None:
            run = []
            nxt = events[n + 1] if n + 1 < len(events) else ""
            shown = " ".join(nxt.split())[:120] if nxt and not _EVENT.match(nxt) else "no output"
            lines.append(("🟡", f"{who} ({status}, seq {seq}): {shown}"))
        elif len(text.split()) > 2:  # "Done." says nothing worth a line
            run = []
            lines.append(("🟡", f"Agent (seq {seq}): {text}"))
    return Said(tuple(lines), task or "continuing", "carry on with the user's request")


def reflected(body: str) -> Said:
    """Every 🔴 line kept, the others folded into one ✅ line, the latest task lines kept."""
    lines = body.split("\n\n", 1)[-1].splitlines()
    red = [("🔴", line[1:].strip()) for line in lines if line.startswith("🔴") and line[1:].strip()]
    others = sum(1 for line in lines if line.startswith(("🟡", "🟢", "✅")))
    task = next((line.split(":", 1)[1].strip() for line in reversed(lines) if line.startswith("Current task:")), None)
    step = next((line.split(":", 1)[1].strip() for line in reversed(lines) if line.startswith("Next step:")), None)
    folded = [("✅", f"{others} earlier steps condensed; recall has the details")] if others else []
    return Said(tuple(red + folded), task, step)


def curated_entries(body: str) -> list[Entry]:
    """The notes as they are, then one entry per new fact (the newest few, duplicates merged into
    the latest), each with its source."""
    existing, _, rest = body.partition("\n\nWhat session ")
    kept: list[Entry] = []
    for line in existing.splitlines():
        match = _NOTE.match(line.strip())
        if match:
            kept.append(Entry(match.group(1), match.group(2), "Project facts"))
    newest: dict[str, str] = {}  # a fact said twice (an observation, then a reflection) is one entry
    for line in rest.splitlines():
        if (match := _FACT.match(line)):
            text = " ".join(match.group(2).split())[:200]
            newest.pop(text, None)
            newest[text] = match.group(1)
    known = {e.text for e in kept}
    new = [Entry(text, source, "Project facts") for text, source in newest.items() if text not in known]
    return kept + new[-NEW_ENTRIES:]
