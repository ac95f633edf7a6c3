"""The long-output chain (long_outputs.py) through Claude Code and through scribe, on one fake
Messages API with Anthropic's cache rules, billed in dollars at list price.

Each agent runs the 15 turns as a script would: `claude -p` then `claude -p --continue`, `scribe
run` then `scribe run -c`, one process per turn, one agent after the other; every request between
an agent's first process starting and its last ending is its own (side calls included). Both are
asked for the same model (`--model` for Claude Code, scribe's default), and the scripted model
gives both the same answers. Beside scribe as shipped: scribe at an earlier revision (`--before
REV`), and scribe with other preview sizes (`SCRIBE_PREVIEW_CHARS`), which is how the default was
chosen: what a smaller preview saves in cache writes against what its extra reads cost.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scribe.fakeapi import FakeMessagesServer, RecordedRequest
from scribe.settings.values import DEFAULT_MODEL, Settings

from .bills import Bill, bill_of
from .cost_report import install_before
from .long_outputs import TURNS, LongOutputModel, turns
from .startup import SCRIBE, Tool, _claude_version, _clean_env, _git_workspace, find_claude

# Preview sizes tried beside the shipped default.
SWEEP = (500, 1_000, 4_000, 8_000, 16_000)
TARGET = 0.40  # scribe's dollars as a share of Claude Code's, on this chain


@dataclass
class AgentRun:
    key: str
    label: str
    requests: list[RecordedRequest] = field(default_factory=list)
    seconds: float = 0.0
    done: int = 0  # turns whose answer was right
    read_ons: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)

    @property
    def bill(self) -> Bill:
        return bill_of(self.requests)

    def figures(self) -> dict[str, Any]:
        bill = self.bill
        usage = [r.usage for r in self.requests if r.usage]
        written_after_first = sum(u["cache_creation_input_tokens"] for u in usage[1:])
        return {"label": self.label, "usd": round(bill.usd, 6), "hit_rate": round(bill.hit_rate, 4),
                "written": sum(u["cache_creation_input_tokens"] for u in usage),
                "written_after_first_call": written_after_first,
                "read": sum(u["cache_read_input_tokens"] for u in usage),
                "uncached": sum(u["input_tokens"] for u in usage),
                "output": sum(u["output_tokens"] for u in usage),
                "calls": dict(self.calls), "read_ons": self.read_ons, "turns_done": self.done,
                "seconds": round(self.seconds, 1), "failed": self.failed}


def _agents(root: Path, base_url: str, claude: str | None, before: str | None) -> list[Tool]:
    tools: list[Tool] = []
    if claude is not None:
        # The tools the chain uses are allowed, as a person's settings would allow them.
        flags = ["--model", DEFAULT_MODEL, "--allowedTools", "Write,Bash,Read", "--"]
        first, next_ = [claude, "-p", *flags], [claude, "-p", "--continue", *flags]
        # In a git repository its instructions hold `git status`, which changes as the chain adds
        # files, so each new process moves its cached prefix; outside git they do not: its
        # cheapest way to run, and the one scribe is measured against.
        for key, label, workspace in (("claude", "Claude Code, in a git repository", _git_workspace(root / "claude")),
                                      ("claude-plain", "Claude Code, outside git", root / "claude-plain")):
            workspace.mkdir(exist_ok=True)
            home = root / f"{key}-home"
            home.mkdir()
            env = _clean_env(home, base_url) | {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                                                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
            tools.append(Tool(key, label, first, next_, env, workspace))
    variants: list[tuple[str, str, str, dict[str, str]]] = [("scribe", "scribe as shipped", SCRIBE, {})]
    if before is not None:
        earlier = install_before(before)
        variants.append(("before", earlier.label, str(earlier.scribe), {}))
    variants += [(f"preview-{n}", f"scribe, preview_chars = {n:,}", SCRIBE, {"SCRIBE_PREVIEW_CHARS": str(n)})
                 for n in SWEEP if n != Settings().preview_chars]
    for key, label, executable, extra in variants:
        home = root / f"{key}-home"
        home.mkdir()
        env = _clean_env(home, base_url) | {"SCRIBE_PERMISSION_MODE": "full-auto", **extra}
        tools.append(Tool(key, label, [executable, "run"], [executable, "run", "-c"], env, _git_workspace(root / key)))
    return tools


def run_agent(tool: Tool, model: LongOutputModel, server: FakeMessagesServer) -> AgentRun:
    dialect = "claude" if tool.key.startswith("claude") else "scribe"
    model.coding.workspaces[dialect] = tool.workspace
    read_before = model.read_ons.get(dialect, 0)
    run = AgentRun(tool.key, tool.label)
    first = len(server.requests)
    tool.reset()
    for n, (prompt, expected) in enumerate(turns()):
        run.seconds += tool.run(server, (tool.first if n == 0 else tool.next) + [prompt], expected)
    run.requests = list(server.requests[first:])
    run.read_ons = model.read_ons.get(dialect, 0) - read_before
    run.calls, run.failed = Counter(tool.calls), list(tool.failed)
    run.done = TURNS - len(tool.failed)
    return run


def measure(before: str | None = None) -> dict[str, Any]:
    claude = find_claude()
    model = LongOutputModel({})
    with tempfile.TemporaryDirectory(prefix="scribe-bench-claude-") as tmp, FakeMessagesServer(model) as server:
        tools = _agents(Path(tmp), server.base_url, claude, before)
        runs = [run_agent(tool, model, server) for tool in tools]
        version = _claude_version(claude, tools[0]) if claude is not None else None
        rejected = sum(1 for r in server.requests if r.status != 200)
    return {"claude_code": version, "model": DEFAULT_MODEL, "turns": TURNS, "rejected": rejected,
            "runs": {r.key: r.figures() for r in runs}}


def section(data: dict[str, Any]) -> str:
    runs = data["runs"]
    claude = [r for key, r in runs.items() if key.startswith("claude")]
    base = min(r["usd"] for r in claude) if claude else None
    rows = ["| agent | $ | ÷ Claude Code (its cheaper run) | hit rate | cache written after the first call | cache read | "
            "uncached input | output | agent calls | read-ons | turns done | wall s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in runs.values():
        share = f"{run['usd'] / base:.2f}×" if base else "—"
        agent = sum(n for kind, n in run["calls"].items() if kind == "agent")
        rows.append(f"| {run['label']} | ${run['usd']:.4f} | {share} | {run['hit_rate']:.1%} | "
                    f"{run['written_after_first_call']:,} | {run['read']:,} | {run['uncached']:,} | {run['output']:,} | "
                    f"{agent} | {run['read_ons']} | {run['turns_done']}/{data['turns']} | {run['seconds']:.0f} |")
    version = (data["claude_code"] or "").split(" ")[0]
    lines = [f"### The long-output chain beside Claude Code {version}".rstrip(), "",
             f"{data['turns']} turns (`benchmarks/long_outputs.py`): eleven write-run-read steps and four long "
             "outputs, each followed by a question the answer must come from (a 4,000-row CSV generated and listed "
             "with `cat -n`, its last 1,500 lines, a test run of 300 tests ending in a summary of 8 failures, 1,100 "
             f"lines from the CSV's middle). Both agents ask for `{data['model']}`; dollars at list price for every "
             "call each made. \"Read-ons\": calls that read more of an output than the prompt showed (scribe's "
             "`recall`, Claude Code's `Read` or `grep` of its saved output).", "", *rows, ""]
    scribe = runs.get("scribe")
    if base and scribe:
        verdict = "at or below" if scribe["usd"] / base <= TARGET else "above"
        lines.append(f"scribe as shipped costs {scribe['usd'] / base:.2f}× Claude Code's dollars on this chain: "
                     f"{verdict} the {TARGET:.2f}× target.")
    elif not claude:
        lines.append("Claude Code is not installed here (`npm install @anthropic-ai/claude-code` in /tmp/cc, or "
                     "SCRIBE_BENCH_CLAUDE naming its executable): its row is missing.")
    failed = [f"{r['label']}: {f}" for r in runs.values() for f in r["failed"]]
    if failed:
        lines += ["", "Turns that did not do their work:", *[f"- {f}" for f in failed]]
    lines += ["", f"Requests the fake API rejected: {data['rejected']}."]
    return "\n".join(lines)
