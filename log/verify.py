"""Checks that a session log is whole and well formed, line by line. Pure: bytes in, findings out.

What must hold (a failure otherwise):
  - every line is a JSON object valid against the event schema (memory/schema.json): the common
    fields, plus the fields of its type when the type is known (unknown types and fields pass);
  - no line is written by a newer scribe (`v` above LOG_FORMAT_VERSION);
  - the first line is a `session` event, and the only one;
  - `seq` starts at 0 and rises by one per line: no gaps, no repeats;
  - each tool_use is answered (a tool_result, or an interrupt naming it) before the next
    assistant or user event.

Two things are warnings, not failures, because scribe repairs them itself on `--continue`: a
torn last line (a writer killed mid-line) and tool calls still open at the very end of the log
(the session stopped mid-call).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any, BinaryIO

from scribe.log.events import LOG_FORMAT_VERSION
from scribe.log.schema_check import event_checker
from scribe.log.whole_lines import WholeLines

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Finding:
    line: int  # 1-based line number in the file
    message: str
    severity: str = ERROR

    def __str__(self) -> str:
        prefix = "warning: " if self.severity == WARNING else ""
        return f"{prefix}line {self.line}: {self.message}"


@dataclass
class Verdict:
    lines: int = 0
    events: int = 0
    findings: list[Finding] = field(default_factory=list)
    whole_bytes: int = 0  # the bytes of its whole lines (a torn last line is not one)

    @property
    def ok(self) -> bool:
        return not any(f.severity == ERROR for f in self.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]


def verify_bytes(data: bytes) -> Verdict:
    return verify_file(BytesIO(data))


def verify_file(fh: BinaryIO, hasher: Any = None) -> Verdict:
    """`verify_bytes` of an open file, read in chunks from its start: a log of any size is
    checked in the memory of its longest line. `hasher` is fed its whole lines as they are read
    (whether its seal holds is log/seal.py's to say)."""
    verdict = Verdict()
    checker = _Checker(verdict)
    lines = WholeLines(fh, hasher=hasher)
    number = 0
    for _, raw in lines:
        number += 1
        checker.line(number, raw)
    tail = lines.torn
    verdict.whole_bytes = lines.end
    verdict.lines = number + (1 if tail else 0)
    checker.end()
    if tail:
        verdict.findings.append(Finding(
            number + 1, f"torn last line ({len(tail)} bytes, no newline): a writer stopped mid-line; "
            "`scribe run -c` cuts it off and keeps its bytes in an error event", WARNING))
    verdict.findings.sort(key=lambda f: f.line)
    return verdict


class _Checker:
    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.last_seq: int | None = None
        self.unreadable_since_seq = 0  # lines with no readable seq since the last seq seen
        self.open_calls: dict[str, tuple[int, str]] = {}  # tool_use id -> (line, tool name)
        self.unreadable_while_open = False
        self.first = True
        self.schema = event_checker()

    def fail(self, line: int, message: str, severity: str = ERROR) -> None:
        self.verdict.findings.append(Finding(line, message, severity))

    def unreadable(self, line: int, message: str) -> None:
        self.unreadable_since_seq += 1
        # the line may have been the missing tool_result: it is reported, its calls are not
        self.unreadable_while_open |= bool(self.open_calls)
        self.fail(line, message)

    def line(self, number: int, raw: bytes) -> None:
        first, self.first = self.first, False
        if not raw.strip():
            self.unreadable(number, "empty line")
            return
        try:
            record: Any = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.unreadable(number, "not valid JSON")
            return
        if not isinstance(record, dict):
            self.unreadable(number, "not a JSON object")
            return
        self.verdict.events += 1
        version = record.get("v")
        if isinstance(version, int) and not isinstance(version, bool) and version > LOG_FORMAT_VERSION:
            self.fail(number, f"written by a newer scribe (log format v{version}; this scribe reads "
                              f"v{LOG_FORMAT_VERSION})")
            self._seq(number, record.get("seq"))
            self.unreadable_while_open |= bool(self.open_calls)  # it may answer a call, in its own way
            return
        for problem in self.schema.problems(record):
            self.fail(number, f"{record.get('type', '?')} event: {problem}")
        type_name = record.get("type")
        if first and type_name != "session":
            self.fail(number, f"the first line is a {type_name!s} event, not a session event")
        elif not first and type_name == "session":
            self.fail(number, "a second session event (only the first line may be one)")
        self._seq(number, record.get("seq"))
        self._pairing(number, type_name, record)

    def _seq(self, number: int, seq: Any) -> None:
        if not isinstance(seq, int) or isinstance(seq, bool):
            self.unreadable_since_seq += 1
            return  # the schema check has said so
        if self.last_seq is None:
            expected_first = self.unreadable_since_seq
            if seq != expected_first:
                self.fail(number, f"seq {seq} on the first readable line; a log starts at seq 0")
        elif seq <= self.last_seq:
            kind = "repeat" if seq == self.last_seq else "goes back"
            self.fail(number, f"seq {seq} follows {self.last_seq} ({kind})")
        elif seq != self.last_seq + 1 and seq - self.last_seq - 1 != self.unreadable_since_seq:
            # a gap exactly as wide as the unreadable lines between is those lines, already reported
            self.fail(number, f"seq {seq} follows {self.last_seq} (gap)")
        self.last_seq = seq if self.last_seq is None else max(seq, self.last_seq)
        self.unreadable_since_seq = 0

    def _pairing(self, number: int, type_name: Any, record: dict[str, Any]) -> None:
        if type_name in ("assistant", "user"):
            for tool_use_id, (line, tool) in self.open_calls.items() if not self.unreadable_while_open else ():
                self.fail(line, f"tool_use {tool_use_id} ({tool}) has no tool_result or interrupt "
                                f"before the {type_name} event on line {number}")
            self.open_calls = {}
            self.unreadable_while_open = False
        if type_name == "assistant" and isinstance(record.get("content"), list):
            for block in record["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    self.open_calls[block["id"]] = (number, str(block.get("name", "?")))
        elif type_name == "tool_result":
            answered = record.get("tool_use_id")
            if isinstance(answered, str) and self.open_calls.pop(answered, None) is None:
                self.fail(number, f"tool_result for {answered} answers no open tool_use", WARNING)
        elif type_name == "interrupt" and isinstance(record.get("tool_use_ids"), list):
            for tool_use_id in record["tool_use_ids"]:
                if isinstance(tool_use_id, str):
                    self.open_calls.pop(tool_use_id, None)

    def end(self) -> None:
        for tool_use_id, (line, tool) in self.open_calls.items():
            self.fail(line, f"tool_use {tool_use_id} ({tool}) is still open at the end of the log "
                            "(the session stopped mid-call; `scribe run -c` closes it with an interrupt)", WARNING)
