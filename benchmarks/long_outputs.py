"""A 15-turn coding chain with long outputs, played by the fake Messages API to scribe or Claude
Code alike (coding_session.py tells them apart by the tools a request offers).

Eleven turns are coding_session's steps (write a small module, run it, read it back). Four print
long outputs and ask what the model can only answer from the output itself:
- Data 1: write gen.py, which writes data.csv (4,000 rows), run it and list the file with `cat -n`
  (4,002 lines); the amount on row 1,234.
- Data 2: `tail -n 1500 data.csv`; the last row and row 2,600.
- Tests 1: write run_tests.py and run it: 300 tests, one line each (about 14,700 characters),
  then the summary a test run ends with (8 failures named, about 800 characters); which failed.
- Data 3: `sed -n '1201,2300p' data.csv` (1,100 lines from the middle); row 1,800.

The model answers from what it was sent. A row the output as shown does not hold, it reads on
as each agent offers: scribe's `recall` by line range where its schema has `lines` (else by
query over that event, as scribe's recall took it before), Claude Code's `Read` of the file its
`<persisted-output>` names, each for a window of 21 lines around the row (the model knows on
which line of the output a row lands, as a person who ran the command would). A test run whose
summary it sees whole (every failure the last line counts) it answers from; else it looks for
the failures: scribe's `recall` by query over that event, Claude Code's `grep` of its saved
output. What is still missing after one read is answered as not found, so the turn counts as
not done. The test run is where a preview's size shows: one too small to hold the summary
costs a read-on call, one large enough to hold it costs its size on every call.
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
_TESTS = re.compile(r"^Tests 1: ")

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


FAILING = (17, 102, 150, 188, 201, 233, 260, 299)
RUN_TESTS_PY = ('import sys\n'
                f"failing = {{{', '.join(map(str, FAILING))}}}\n"
                "for i in range(300):\n"
                "    verdict = 'FAILED' if i in failing else 'PASSED'\n"
                "    print(f'tests/test_mod_{i:03d}.py::test_case_{i % 5} {verdict} [{i * 100 // 300:3d}%]')\n"
                "print('=' * 27 + ' short test summary info ' + '=' * 28)\n"
                "for i in sorted(failing):\n"
                "    print(f'FAILED tests/test_mod_{i:03d}.py::test_case_{i % 5} - AssertionError: '\n"
                "          f'checksum {i * 31 % 9973} != {i * 31 % 9973 + 1}')\n"
                "print('=' * 24 + f' {len(failing)} failed, {300 - len(failing)} passed in 12.34s ' + '=' * 24)\n"
                "sys.exit(1)\n")
# A summary line, wherever a read-on answer puts it (after a line number, a seq, ...).
_FAILED = re.compile(r"FAILED (\S+) - AssertionError")
_COUNTED = re.compile(r" (\d+) failed, \d+ passed in ")


class TestRun:
    prompt = "Tests 1: write run_tests.py (it runs the suite and reports as pytest does), run it, and tell me which tests failed."

    @staticmethod
    def answer(names: list[str], counted: int | None) -> str:
        if counted is None or len(names) != counted:
            return f"The run's summary is not all in view: {len(names)} failures seen, {counted} counted."
        return f"{counted} tests failed: " + ", ".join(names) + "."

    def expected(self) -> str:
        return self.answer([f"tests/test_mod_{i:03d}.py::test_case_{i % 5}" for i in FAILING], len(FAILING))


TESTS = TestRun()
# Where the long outputs fall among the steps: turns 2, 6, 9 and 12 of 15.
ORDER: tuple[int | DataStep | TestRun, ...] = (1, DATA_STEPS[0], 2, 3, 4, DATA_STEPS[1], 5, 6, TESTS, 7, 8,
                                               DATA_STEPS[2], 9, 10, 11)
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
        if dialect is None or side_call_kind(request) != "agent":
            return self.coding(request)
        data, tests = current_prompt(request, _DATA), current_prompt(request, _TESTS)
        if data is None and tests is None:
            return self.coding(request)
        self.coding.count(f"{dialect.name} agent")
        if tests is not None:
            return self._tests(tests[1], dialect, request)
        assert data is not None
        return self._data(DATA_STEPS[int(data[0].group(1)) - 1], data[1], dialect, request)

    def _tests(self, results: list[str], dialect: Dialect, request: dict[str, Any]) -> Reply:
        if not results:
            workspace = self.coding.workspaces[dialect.name]
            return Reply([text_block("I'll write run_tests.py."),
                          tool_use_block(dialect.write, {dialect.path_key: dialect.path(workspace, "run_tests.py"),
                                                         "content": RUN_TESTS_PY})])
        if len(results) == 1:
            return Reply([tool_use_block(dialect.run, {"command": "python3 run_tests.py"})])
        seen = "\n".join(results[1:])
        names = sorted(set(_FAILED.findall(seen)))
        counted = _COUNTED.search(seen)
        complete = counted is not None and len(names) == int(counted.group(1))
        read_on = failures_call(dialect, request, results[1])
        if not complete and len(results) == 2 and read_on is not None:
            self.read_ons[dialect.name] = self.read_ons.get(dialect.name, 0) + 1
            return Reply([read_on])
        return Reply.text(TESTS.answer(names, int(counted.group(1)) if counted else None))

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


def failures_call(dialect: Dialect, request: dict[str, Any], shown: str) -> dict[str, Any] | None:
    """The call that finds the lines naming failures in the output `shown` stands for."""
    if dialect is CLAUDE_CODE:
        saved = re.search(r"Full output saved to: (\S+)", shown)
        return tool_use_block("Bash", {"command": f"grep '^FAILED ' {saved.group(1)}"}) if saved else None
    seq = re.search(r'"seq": (\d+)', shown) or re.search(r"recall\(seq_from=(\d+)", shown)
    if seq is None:
        return None
    at = int(seq.group(1))
    if _recall_takes_lines(request):
        return tool_use_block("recall", {"seq": at, "query": "^FAILED "})
    return tool_use_block("recall", {"query": "^FAILED ", "seq_from": at, "seq_to": at})


def _recall_takes_lines(request: dict[str, Any]) -> bool:
    recall: dict[str, Any] = next((t for t in request.get("tools") or [] if t.get("name") == "recall"), {})
    return "lines" in recall.get("input_schema", {}).get("properties", {})


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
    if _recall_takes_lines(request):
        return tool_use_block("recall", {"seq": int(seq.group(1)), "lines": f"{first}-{last}"})
    at = int(seq.group(1))
    return tool_use_block("recall", {"query": f"item-{k:05d}", "seq_from": at, "seq_to": at})
