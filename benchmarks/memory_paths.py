"""Memory by each compression path, measured as a memory: facts of every kind planted across a
220-turn session (scripted through the fake API, in one process, as the REPL runs it), the
session compressed by each path, and for each path the share of facts still in the final prompt
and the share one `recall` with the fact's own words brings back.

Paths: the observer and reflector answer in text (the `bulleted` habit), through a forced tool
(`honour`), or not usably at all (`refusal`, so every compression is the model-free stub of
memory/extract.py and its model-free condensation).

The fake observer (fakeapi/sidecalls.py) answers as a terse model would, from what it is shown
and knowing nothing of what was planted: a person's message as one 🔴 line of its first 160
characters, the agent's first 160 characters, and a tool output's first line only; its
reflector keeps the 🔴 lines and folds the rest into one ✅ line. So a fact said late in a long
message, or printed below an output's first line, is not kept by construction of the planting:
whether it survives is what the figure measures. Facts are planted at every place a person or a
tool puts them: short statements, the tail of long messages, deep in command output, and in the
agent's own answers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.agent.builtins import new_session_tools
from scribe.agent.config import AgentConfig
from scribe.agent.driver import drive
from scribe.agent.opening import assemble
from scribe.agent.protocol import TurnEnded
from scribe.agent.session.start import start_session
from scribe.context.render import render
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel, text_block, tool_use_block
from scribe.log.jsonl import read_log
from scribe.settings.values import Settings
from scribe.tools.base import ToolContext
from scribe.tools.recall import Recall
from scribe.tools.registry import tool_definitions

from .replay import temporary_repository

TURNS = 220
PATHS = {"model answer in text": {"habit": "bulleted", "tools": "ignore"},
         "forced tool": {"habit": "bulleted", "tools": "honour"},
         "model-free stub": {"habit": "refusal", "tools": "ignore"}}
FILLER = "Filler words about nothing in particular keep this message long, as people's messages are. "


@dataclass(frozen=True)
class Planted:
    kind: str  # goal | decision | constraint | preference | path | number | error | agent
    text: str  # the exact words that must come back
    turn: int
    said: str  # the user message that carries it (or asks for the command that prints it)
    output: str | None = None  # for an error: the command's output, the fact deep in it
    answer: str | None = None  # for a fact the agent states


def planted() -> list[Planted]:
    """Two facts of each kind, at turns spread over the session; where in a message (or an
    output) each one sits varies."""
    out: list[Planted] = []
    stated = [("goal", "cut the p99 latency of /checkout below 180 ms"), ("goal", "ship the ledger export by Friday"),
              ("decision", "we use SQLite in WAL mode, not Postgres"), ("decision", "retries back off at 250 ms doubling"),
              ("constraint", "never touch anything under vendor/"), ("constraint", "no new dependencies without asking"),
              ("preference", "I prefer tabs in Makefiles"), ("preference", "keep commit subjects under 60 characters")]
    for n, (kind, text) in enumerate(stated):
        turn = 5 + n * 13
        out.append(Planted(kind, text, turn, f"Please note: {text}."))
    late = [("path", "services/ledger/reconcile.py"), ("number", "shard count 48213"),
            ("path", "config/retry.toml"), ("number", "port 7411")]
    for n, (kind, text) in enumerate(late):
        turn = 110 + n * 11
        out.append(Planted(kind, text, turn, FILLER * 3 + f"By the way, the {kind} to remember: {text}."))
    errors = ["checksum mismatch in block 77 (E1042)", "ledger lock held by pid 3311 (E2203)"]
    for n, text in enumerate(errors):
        turn = 40 + n * 90
        body = "\n".join(f"scanned block {i}: ok" for i in range(30)) + f"\nerror: {text}\n"
        out.append(Planted("error", text, turn, f"Run the ledger check number {n}.", output=body))
    agent = ["the cache key now includes the tenant id", "the migration is tagged v14-ledger"]
    for n, text in enumerate(agent):
        turn = 150 + n * 30
        out.append(Planted("agent", text, turn, f"What did you change in step {turn}?", answer=f"Done: {text}."))
    return sorted(out, key=lambda p: p.turn)


def script(facts: list[Planted]) -> tuple[list[str], dict[str, Planted]]:
    by_turn = {p.turn: p for p in facts}
    prompts = []
    for k in range(TURNS):
        fact = by_turn.get(k)
        prompts.append(fact.said if fact else f"Step {k}: tidy module m{k % 17} and tell me in one line.")
    return prompts, {p.said: p for p in facts}


class Agent:
    """The agent's side: one short answer per turn; a command where a fact is an error output."""

    def __init__(self, facts: dict[str, Planted]) -> None:
        self.facts = facts

    def __call__(self, request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]
        texts = [b.get("text", "") for b in last["content"] if b.get("type") == "text"]
        asked = texts[-1] if texts else ""
        fact = self.facts.get(asked)
        if any(b.get("type") == "tool_result" for b in last["content"]):
            return Reply.text("The check failed; the error is in its output.")
        if fact is not None and fact.output is not None:
            command = f"printf %s {json.dumps(fact.output)}"
            return Reply([text_block("Running it."), tool_use_block("run_command", {"command": command})])
        if fact is not None and fact.answer is not None:
            return Reply.text(fact.answer)
        return Reply.text("Done.")


@dataclass(frozen=True)
class PathResult:
    path: str
    in_prompt: list[str]
    recalled: list[str]
    total: int
    kept_stated: bool  # every goal, decision and constraint in the prompt
    observations: int
    stubs: int

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def run_path(name: str, facts: list[Planted]) -> PathResult:
    prompts, by_said = script(facts)
    config = PATHS[name]
    model = SideCallModel(Agent(by_said), habit=config["habit"], tools=config["tools"])
    settings = Settings(permission_mode="full-auto", observe_tokens=1500, reflect_tokens=800,
                        observe_on_payback=False, compress_when_cold=False, watch_files=False, curate_notes=False,
                        sandbox=False)
    with temporary_repository() as workspace, FakeMessagesServer(model) as server:
        saved = {k: os.environ.get(k) for k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "SCRIBE_HOME")}
        os.environ |= {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "benchmark-no-key",
                       "SCRIBE_HOME": str(workspace / ".scribe")}
        try:
            config = AgentConfig(workspace, settings=dataclasses.replace(settings, max_retries=0), servers=False)
            opened = drive(assemble(config), lambda event: None)
            agent = opened.adopt(start_session(workspace, settings, tool_definitions(new_session_tools(settings))))
            log = agent.session
            for prompt in prompts:
                ended = [e for e in agent.turn(prompt) if isinstance(e, TurnEnded)][-1]
                if ended.reason != "end_turn":
                    raise RuntimeError(f"{name}: turn ended with {ended.reason}: {ended.error}")
            log.close()
            events = read_log(log.path).events
            shown = prompt_text(render(events).body())
            in_prompt = [p.text for p in facts if p.text in shown]
            recalled = [p.text for p in facts if p.text in recall(log.path, workspace, p.text)]
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    stated = [p.text for p in facts if p.kind in ("goal", "decision", "constraint")]
    observations = [e for e in events if e.type == "observation"]
    return PathResult(name, in_prompt, recalled, len(facts), all(t in in_prompt for t in stated),
                      len(observations), sum(1 for e in observations if e.model == "extractive"))


def prompt_text(body: dict[str, Any]) -> str:
    parts = [b.get("text", "") for b in body["system"]]
    for message in body["messages"]:
        for block in message["content"]:
            parts.append(block.get("text") or json.dumps(block, ensure_ascii=False))
    return "\n".join(parts)


def recall(log: Path, workspace: Path, words: str) -> str:
    """One `recall` call with the fact's own words (escaped, so they match as written)."""
    def records() -> Any:
        with open(log, encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    yield json.loads(line)

    out = Recall().run({"query": re.escape(words)}, ToolContext(workspace, read_log=records))
    return out.text


def measure() -> dict[str, Any]:
    facts = planted()
    results = [run_path(name, facts) for name in PATHS]
    return {"turns": TURNS, "facts": [p.__dict__ for p in facts], "paths": [r.as_dict() for r in results]}


def section(data: dict[str, Any]) -> str:
    rows = ["| path | facts in the final prompt | brought back by one `recall` with their own words | goals, "
            "decisions, constraints in the prompt | observations (of them model-free) |", "|---|---|---|---|---|"]
    for r in data["paths"]:
        total = r["total"]
        rows.append(f"| {r['path']} | {len(r['in_prompt'])}/{total} ({len(r['in_prompt']) / total:.0%}) | "
                    f"{len(r['recalled'])}/{total} ({len(r['recalled']) / total:.0%}) | "
                    f"{'all' if r['kept_stated'] else 'NOT all'} | {r['observations']} ({r['stubs']}) |")
    kinds = sorted({f["kind"] for f in data["facts"]})
    return (f"### Memory by compression path ({data['turns']} turns, {len(data['facts'])} planted facts: "
            f"{', '.join(kinds)})\n\n" + "\n".join(rows))
