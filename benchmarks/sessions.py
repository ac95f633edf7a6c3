"""Scripted sessions the benchmarks replay: the same turns for every strategy.

Each session is a list of turns; a turn is the user's prompt and the model's replies (tool calls,
then an answer). The tool calls really run, in a temporary git repository, so outputs are real.
Planted facts are stated early and checked at the end: are they still in the prompt, or at least
recallable from the log?
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scribe.fakeapi import Reply, text_block, tool_use_block


@dataclass
class Turn:
    prompt: str
    replies: list[Reply]


@dataclass
class ScriptedSession:
    name: str
    turns: list[Turn]
    facts: list[str] = field(default_factory=list)  # exact strings that must survive


def _py(code: str) -> str:
    return f"python3 -c \"{code}\""


def tool_heavy(turns: int = 14) -> ScriptedSession:
    """A coding session: files written and edited, commands with large outputs."""
    facts = ["staging-2", "MAGIC_CONSTANT = 48213", "never touch vendor/"]
    script = [Turn(
        "We deploy to staging-2 and you must never touch vendor/. Create settings.py with "
        "MAGIC_CONSTANT = 48213 and a loader module.",
        [Reply([text_block("Creating settings.py."), tool_use_block("write_file", {
            "path": "settings.py", "content": "MAGIC_CONSTANT = 48213\nDEPLOY_TARGET = 'staging-2'\n"})]),
         Reply([tool_use_block("write_file", {"path": "loader.py", "content": (
             "import settings\n\n\ndef load(n):\n    return [settings.MAGIC_CONSTANT * i for i in range(n)]\n")})]),
         Reply([text_block("settings.py and loader.py are in place; deploy target staging-2 noted.")])])]
    for k in range(1, turns):
        rows = 400 + 37 * k
        script.append(Turn(
            f"Step {k}: run the loader over {rows} rows and show me the table, then summarise.",
            [Reply([text_block(f"Running step {k}."), tool_use_block("run_command", {"command": _py(
                f"import loader\nfor i, v in enumerate(loader.load({rows})): "
                f"print(f'step {k} row {{i:5d}} value {{v:12d}} checksum {{(v * 31) % 9973:5d}}')")})]),
             Reply([tool_use_block("read_file", {"path": "loader.py"})]),
             Reply([tool_use_block("edit_file", {"path": "loader.py", "old_text": f"# step {k - 1}\n" if k > 1 else
                                                 "import settings\n", "new_text": f"# step {k}\n" if k > 1 else
                                                 "import settings\n# step 1\n"})]),
             Reply([text_block(f"Step {k}: {rows} rows printed; values are multiples of 48213; "
                               f"loader.py now marks step {k}.")])]))
    return ScriptedSession("tool-heavy", script, facts)


def chatty(turns: int = 40) -> ScriptedSession:
    """A design conversation: long user and assistant messages, little tool output."""
    facts = ["port 8443", "Dana Whitfield", "retry budget of 7"]
    script = [Turn("Let's design the service. It listens on port 8443; the owner is Dana Whitfield; "
                   "keep a retry budget of 7 per request.",
                   [Reply([text_block("Noted: port 8443, owner Dana Whitfield, retry budget of 7. " * 3)])])]
    for k in range(1, turns):
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
    return ScriptedSession("chatty", script, facts)
