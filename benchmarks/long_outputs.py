"""A 15-turn coding chain with long outputs, played by the fake Messages API to scribe or Claude
Code alike (coding_session.py tells them apart by the tools a request offers).

Twelve turns are coding_session's steps (write a small module, run it, read it back). Three print
long outputs and ask about rows the model can only answer from the output itself:
- Data 1: write gen.py, which writes data.csv (4,000 rows), run it and list the file with `cat -n`
  (4,002 lines); the amount on row 1,234.
- Data 2: `tail -n 1500 data.csv`; the last row and row 2,600.
- Data 3: `sed -n '1201,2300p' data.csv` (1,100 lines from the middle); row 1,800.

The model answers from what it was sent. A row the output as shown does not hold, it reads on
as each agent offers: scribe's `recall` by line range where its schema has `lines` (else by
query over that event, as scribe's recall took it before), Claude Code's `Read` of the file its
`<persisted-output>` names, each for a window of 21 lines around the row (the model knows on
which line of the output a row lands, as a person who ran the command would). A row still
missing after one read is answered as not found, so the turn counts as not done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.fakeapi import Reply, ScriptItem, side_call_kind, text_block, tool_use_block

from .coding_session import (
    CLAUDE_CODE,
    CodingModel,
    Dialect,
    answer_for,
    current_prompt,
    dialect_of,
    prompt_for,
)

ROWS = 4000
WINDOW = 10  # lines read on either side of the row sought
_DATA = re.compile(r"^Data (\d+): ")

GEN_PY = ('rows = ["id,name,amount,checksum"]\n'
          f"for k in range(1, {ROWS + 1}):\n"
          '    rows.append(f"{k},item-{k:05d},{(k * 7919) % 100000 / 100:.2f},{(k * 31) % 9973}")\n'
          'with open("data.csv", "w") as out:\n'
          '    out.write("\\n".join(rows) + "\\n")\n'
          'print(f"wrote {len(rows) - 1} rows to data.csv")\n')


def row(k: int) -> tuple[str, str, str]:
    """Row k of data.csv: its name, amount and checksum, as gen.py writes them."""
    return f"item-{k:05d}", f"{(k * 7919) % 100000 / 100:.2f}", str((k * 31) % 9973)


@dataclass(frozen=True)
class DataStep:
    n: int
    ask: str  # what the person asks, after "Data N: "
    command: str
    rows: tuple[int, ...]  # the rows the answer needs
    first_row_line: int  # the output line that row 1 would be on (row k is on k - 1 + this)
    writes_gen: bool = False

    @property
    def prompt(self) -> str:
        return f"Data {self.n}: {self.ask}"

    def line_of(self, k: int) -> int:
        return k - 1 + self.first_row_line

    def answer(self, found: dict[int, tuple[str, str, str] | None]) -> str:
        said = [f"row {k}: {v[0]}, amount {v[1]}, checksum {v[2]}" if v else f"row {k}: not found"
                for k, v in found.items()]
        return "From the output: " + "; ".join(said) + "."

    def expected(self) -> str:
        return self.answer({k: row(k) for k in self.rows})


DATA_STEPS = (
    DataStep(1, f"write gen.py that writes data.csv with {ROWS:,} rows (id, name, amount, checksum), run it, list "
                "data.csv with line numbers, and tell me the amount on row 1234.",
             "python3 gen.py && cat -n data.csv", (1234,), first_row_line=3, writes_gen=True),
    DataStep(2, "show me the last 1,500 lines of data.csv, and tell me the last row and row 2600.",
             "tail -n 1500 data.csv", (4000, 2600), first_row_line=1 - 2500),
    DataStep(3, "print lines 1201-2300 of data.csv and tell me about row 1800.",
             "sed -n '1201,2300p' data.csv", (1800,), first_row_line=1 - 1199),
)
# Where the data turns fall among the steps: turns 2, 7 and 12 of 15.
ORDER: tuple[int | DataStep, ...] = (1, DATA_STEPS[0], 2, 3, 4, 5, DATA_STEPS[1], 6, 7, 8, 9, DATA_STEPS[2], 10, 11, 12)
TURNS = len(ORDER)


def turns() -> list[tuple[str, str]]:
    """(prompt, what the answer of a turn that did its work contains), in order."""
    return [(prompt_for(t), answer_for(t)) if isinstance(t, int) else (t.prompt, t.expected()) for t in ORDER]


class LongOutputModel:
    """The chain's responder: data turns here, every other call as CodingModel answers it (whose
    counters, by agent and kind, count these calls too)."""

    def __init__(self, workspaces: dict[str, Path]) -> None:
        self.coding = CodingModel(workspaces)
        self.read_ons: dict[str, int] = {}  # dialect name -> read-on calls made

    @property
    def calls(self) -> Any:
        return self.coding.calls

    def __call__(self, request: dict[str, Any]) -> ScriptItem:
        dialect = dialect_of(request)
        found = current_prompt(request, _DATA) if dialect is not None and side_call_kind(request) == "agent" else None
        if dialect is None or found is None:
            return self.coding(request)
        self.coding.count(f"{dialect.name} agent")
        return self._data(DATA_STEPS[int(found[0].group(1)) - 1], found[1], dialect, request)

    def _data(self, step: DataStep, results: list[str], dialect: Dialect, request: dict[str, Any]) -> Reply:
        workspace = self.coding.workspaces[dialect.name]
        if step.writes_gen and not results:
            return Reply([text_block("I'll write gen.py."),
                          tool_use_block(dialect.write, {dialect.path_key: dialect.path(workspace, "gen.py"),
                                                         "content": GEN_PY})])
        ran = 1 if step.writes_gen else 0  # the index of the command's result
        if len(results) == ran:
            return Reply([tool_use_block(dialect.run, {"command": step.command})])
        seen = "\n".join(results[ran:])
        found = {k: _row_in(seen, k) for k in step.rows}
        missing = [k for k, v in found.items() if v is None]
        read_on = [read_on_call(dialect, request, results[ran], step.line_of(k), k) for k in missing]
        if missing and len(results) == ran + 1 and all(read_on):
            self.read_ons[dialect.name] = self.read_ons.get(dialect.name, 0) + len(missing)
            return Reply([block for block in read_on if block])
        return Reply.text(step.answer(found))


def _row_in(text: str, k: int) -> tuple[str, str, str] | None:
    match = re.search(rf"\b(item-{k:05d}),(\d+\.\d\d),(\d+)\b", text)
    return (match.group(1), match.group(2), match.group(3)) if match else None


def read_on_call(dialect: Dialect, request: dict[str, Any], shown: str, line: int, k: int) -> dict[str, Any] | None:
    """The call that reads lines around `line` of the output `shown` stands for, as this agent
    offers it; None when the output names no way to read on."""
    first, last = max(1, line - WINDOW), line + WINDOW
    if dialect is CLAUDE_CODE:
        saved = re.search(r"Full output saved to: (\S+)", shown)
        return tool_use_block("Read", {"file_path": saved.group(1), "offset": first, "limit": last - first + 1}) \
            if saved else None
    seq = re.search(r'"seq": (\d+)', shown) or re.search(r"recall\(seq_from=(\d+)", shown)
    if seq is None:
        return None
    recall: dict[str, Any] = next((t for t in request.get("tools") or [] if t.get("name") == "recall"), {})
    if "lines" in recall.get("input_schema", {}).get("properties", {}):
        return tool_use_block("recall", {"seq": int(seq.group(1)), "lines": f"{first}-{last}"})
    at = int(seq.group(1))
    return tool_use_block("recall", {"query": f"item-{k:05d}", "seq_from": at, "seq_to": at})
