"""Logs at scale, written straight to disk for `python -m benchmarks scale`: one session log of
about a gigabyte (some three million lines) and ten thousand small sessions, each a valid log
(`scribe log verify` passes) of the shape a tool-heavy session leaves: turns of a user line, a
tool call, its usage, its output, an answer and its usage, with an observation every 40 events.

Lines are formatted from templates rather than made as events one by one: the big log is
written in about a minute, not ten."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scribe.log.events import SessionEvent
from scribe.log.jsonl import encode
from scribe.settings.values import Settings
from scribe.tools.registry import builtin_tools, tool_definitions

MODEL = "claude-sonnet-4-5"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OUTPUT = json.dumps("".join(f"tests/test_part_{i}.py::test_case_{i} PASSED [{i}%]\n" for i in range(12)))


def header(session_id: str, cwd: str, created: datetime) -> bytes:
    event = SessionEvent(seq=0, ts=_iso(created), id=session_id, created=_iso(created), cwd=cwd, model=MODEL,
                         scribe_version="bench", system="You are scribe." * 50,
                         tools=tool_definitions(builtin_tools()), prompt_hash="0", config=Settings().recorded())
    return encode(event)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def turn(seq: int, n: int, at: datetime) -> list[bytes]:
    """The six lines of one turn from `seq` on (n: the turn's number)."""
    ts = _iso(at)
    usage = ('{"v":1,"seq":%d,"ts":"' + ts + '","type":"usage","purpose":"agent","model":"' + MODEL
             + '","input":%d,"cache_read":%d,"cache_write":%d,"output":%d,"latency_ms":%d,"message_id":null}\n')
    return [
        (f'{{"v":1,"seq":{seq},"ts":"{ts}","type":"user","text":"step {n}: run the tests of part {n % 97} '
         f'and tell me what failed"}}\n').encode(),
        (f'{{"v":1,"seq":{seq + 1},"ts":"{ts}","type":"assistant","content":[{{"type":"text","text":"Running '
         f'part {n % 97}."}},{{"type":"tool_use","id":"toolu_{n:08d}","name":"run_command","input":'
         f'{{"command":"pytest -q tests/part_{n % 97}"}}}}],"stop_reason":"tool_use"}}\n').encode(),
        (usage % (seq + 2, 12, 14_000 + n % 1000, 300, 40, 900)).encode(),
        (f'{{"v":1,"seq":{seq + 3},"ts":"{ts}","type":"tool_result","tool_use_id":"toolu_{n:08d}",'
         f'"tool":"run_command","output":{OUTPUT},"is_error":false}}\n').encode(),
        (f'{{"v":1,"seq":{seq + 4},"ts":"{ts}","type":"assistant","content":[{{"type":"text","text":"Part '
         f'{n % 97} passes: 12 tests, none failed (token{n})."}}],"stop_reason":"end_turn"}}\n').encode(),
        (usage % (seq + 5, 8, 14_400 + n % 1000, 200, 25, 700)).encode(),
    ]


def observation(seq: int, first: int, at: datetime) -> bytes:
    return (f'{{"v":1,"seq":{seq},"ts":"{_iso(at)}","type":"observation","text":"🔴 the user runs the tests '
            f'part by part\\n🟡 parts up to {first} pass","seq_from":{first},"seq_to":{seq - 1},"tokens":40,'
            f'"model":"claude-haiku-4-5"}}\n').encode()


def write_session(path: Path, cwd: str, *, size: int | None = None, turns: int | None = None,
                  created: datetime = START, step: timedelta = timedelta(seconds=1)) -> int:
    """A session log of about `size` bytes or of `turns` turns; how many lines it holds."""
    seq, n, written, lines = 1, 0, 0, 1
    observed = 1
    at = created
    with path.open("wb") as fh:
        fh.write(first := header(path.stem, cwd, created))
        written += len(first)
        batch: list[bytes] = []
        while (size is None or written < size) and (turns is None or n < turns):
            n += 1
            at += step
            for line in turn(seq, n, at):
                batch.append(line)
                written += len(line)
            seq += 6
            lines += 6
            if seq - observed >= 40:
                batch.append(line := observation(seq, observed, at))
                written += len(line)
                observed, seq, lines = seq, seq + 1, lines + 1
            if len(batch) > 10_000:
                fh.writelines(batch)
                batch.clear()
        fh.writelines(batch)
    return lines


def many_sessions(folder: Path, cwd: str, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        created = START + timedelta(minutes=i)
        session_id = created.strftime("%Y%m%d-%H%M%S") + f"-{i:06x}"
        write_session(folder / f"{session_id}.jsonl", cwd, turns=3, created=created)
