"""Scripted sessions the benchmarks replay: the same turns for every strategy.

Each session is a list of turns; a turn is the user's prompt and the model's replies (tool calls,
then an answer), and how long the person was away before it. The tool calls really run, in a
temporary git repository, so outputs are real.

Every session plants five facts early, one of each kind a person relies on an agent to keep: a
path, a number, a decision, a constraint the person stated, and an error message a command
printed. Its last turn (the probe) asks for all five without naming them; see scripted_model.py
for how the model answers it and memory_kept.py for what counts as kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scribe.fakeapi import Reply, text_block, tool_use_block


@dataclass(frozen=True)
class Fact:
    kind: str  # path | number | decision | constraint | error
    text: str  # the exact string that must come back
    cue: str  # what the model searches its log for when the fact is not in view (a recall query)


@dataclass
class Turn:
    prompt: str
    replies: list[Reply]
    idle_before_s: float = 0.0  # the person was away this long before sending it


@dataclass
class ScriptedSession:
    name: str
    turns: list[Turn]
    facts: list[Fact] = field(default_factory=list)

    @property
    def probe(self) -> str:
        return PROBE


FACTS = [
    Fact("path", "services/ledger/reconcile.py", "reconciler lives in"),
    Fact("number", "shard count is 48213", "shard count"),
    Fact("decision", "SQLite in WAL mode, not Postgres", "we decided"),
    Fact("constraint", "never touch vendor/", "never touch"),
    Fact("error", "checksum mismatch in block 77 (E1042)", "ledger check failed"),
]
# Asks for each fact by what it is, never by its text, so the question itself keeps nothing.
PROBE = ("Before we stop, remind me precisely: where does the reconciler live, what is the shard count, "
         "what did we decide about storage, what must you never do, and what did the ledger check fail with?")


def _py(code: str) -> str:
    return f"python3 -c \"{code}\""


def _planting() -> list[Turn]:
    """The first two turns of every coding session: the person states four facts, and a check
    fails with the fifth."""
    return [
        Turn("Context first: the reconciler lives in services/ledger/reconcile.py and the shard count is 48213. "
             "We decided on SQLite in WAL mode, not Postgres. You must never touch vendor/. Create settings.py "
             "with the shard count and a loader module.",
             [Reply([text_block("Creating settings.py."), tool_use_block("write_file", {
                 "path": "settings.py", "content": "SHARDS = 48213\nSTORE = 'sqlite-wal'\n"})]),
              Reply([tool_use_block("write_file", {"path": "loader.py", "content": (
                  "import settings\n\n\ndef load(n):\n    return [settings.SHARDS * i for i in range(n)]\n")})]),
              Reply([text_block("settings.py and loader.py are in place; SQLite WAL noted, vendor/ left alone.")])]),
        Turn("Run the ledger check and tell me what it says.",
             [Reply([tool_use_block("run_command", {"command": _py(
                 "import sys; print('ledger check: 12 blocks scanned'); "
                 "sys.exit('ledger check failed: checksum mismatch in block 77 (E1042)')")})]),
              Reply([text_block("The ledger check failed on block 77 with a checksum mismatch (E1042).")])]),
    ]


def _probe_turn() -> Turn:
    return Turn(PROBE, [])  # answered by the scripted model from what it sees (scripted_model.py)


def coding(name: str, turns: int, *, rows: int = 400, growth: int = 37,
           idle: dict[int, float] | None = None) -> ScriptedSession:
    """A coding session: files written and edited, a command with a large output each turn
    (`rows` lines, `growth` more each turn), the probe last. `idle`: turn index -> seconds away."""
    script = _planting()
    for k in range(1, turns - len(script) + 1):
        n = rows + growth * k
        script.append(Turn(
            f"Step {k}: run the loader over {n} rows and show me the table, then summarise.",
            [Reply([text_block(f"Running step {k}."), tool_use_block("run_command", {"command": _py(
                f"import loader\nfor i, v in enumerate(loader.load({n})): "
                f"print(f'step {k} row {{i:5d}} value {{v:12d}} checksum {{(v * 31) % 9973:5d}}')")})]),
             Reply([tool_use_block("read_file", {"path": "loader.py"})]),
             Reply([tool_use_block("edit_file", {"path": "loader.py", "old_text": f"# step {k - 1}\n" if k > 1 else
                                                 "import settings\n", "new_text": f"# step {k}\n" if k > 1 else
                                                 "import settings\n# step 1\n"})]),
             Reply([text_block(f"Step {k}: {n} rows printed; values are multiples of 48213; "
                               f"loader.py now marks step {k}.")])]))
    for index, seconds in (idle or {}).items():
        script[index].idle_before_s = seconds
    script.append(_probe_turn())
    return ScriptedSession(name, script, list(FACTS))


def chatty(turns: int = 20) -> ScriptedSession:
    """A design conversation: long user and assistant messages, little tool output."""
    script = _planting()
    for k in range(1, turns - len(script) + 1):
        question = (f"Question {k}: how should component {k} handle backpressure, timeouts and partial "
                    f"failure when the upstream is slow? Consider queue depth {k * 10} and explain. " * 3)
        answer = "\n\n".join(
            f"Part {p} for component {k}: bound the queue at {k * 10 + p}, shed load with 503 beyond it, "
            f"propagate deadlines from the caller (budget {100 + p * k} ms), retry idempotent calls only, "
            f"and record queue depth, shed count and p99 latency as metrics named comp{k}_part{p}. "
            f"Partial failures return what completed with a warning listing the {p} missing shards."
            for p in range(1, 13))
        replies = [Reply([text_block(answer)])]
        if k % 6 == 0:
            replies = [Reply([tool_use_block("list_files", {})]), *replies]
        script.append(Turn(question, replies))
    script.append(_probe_turn())
    return ScriptedSession("chatty", script, list(FACTS))


def shapes() -> list[ScriptedSession]:
    """Every shape the cost report covers (the long one runs in-process, like a REPL session)."""
    return [
        coding("short", 5),
        coding("medium", 15),
        coding("tool-heavy", 30),
        coding("big outputs", 10, rows=5000, growth=0),
        coding("idle gaps", 12, idle={4: 600.0, 8: 900.0, 11: 420.0}),
        chatty(20),
    ]


def long_session() -> ScriptedSession:
    return coding("long (REPL, in-process)", 100, rows=200, growth=3)
