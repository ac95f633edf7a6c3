"""The derived index beside the logs: one SQLite file (`<state>/index.sqlite3`) that knows every
session's figures, every model call and the words of every event, so listing, totals and word
search never read whole logs.

The JSONL logs stay the truth. Each session's row records the byte offset of whole lines it
covers, with a hash of the log's first line and of the last line it covers; a log that grew is
folded on from that offset, one that shrank or whose covered bytes changed is folded anew from
its start, one whose size and mtime are unchanged is not opened at all. Deleting the file loses
nothing: it is rebuilt on the next command that asks. WAL mode lets any number of readers share
it; SQLite's own lock (with a busy timeout) keeps writers one at a time. Created 0600 in a 0700
folder, as every state file: it holds the words of the sessions.

The tables are documented for people who query them with `sqlite3` in docs/index.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .events import Event, SessionEvent, UnknownEvent, UsageEvent, UserEvent
from .lines import WholeLines
from .log import LogError, LogRead, read_line
from .search import texts
from .stats import Figures, Pricer
from .store import SessionFile, SessionStore, header_problem

INDEX_NAME = "index.sqlite3"
# Bumped when the tables change: an index of another version is dropped and rebuilt.
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 10_000
# Lines folded per transaction: the writer lock is never held for long, and memory stays flat.
BATCH_LINES = 20_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,             -- the log's file name without .jsonl
    path TEXT NOT NULL,
    -- from the log's first line as it is (what finding a session reads)
    created TEXT, cwd TEXT,
    header_problem TEXT,                 -- why the first line is not a session event, or NULL
    -- from the first readable event when it is the session event
    is_session INTEGER NOT NULL DEFAULT 0,
    session_created TEXT, session_cwd TEXT, model TEXT,
    -- what the index covers of the file
    size INTEGER NOT NULL DEFAULT 0, mtime_ns INTEGER NOT NULL DEFAULT 0,
    covered INTEGER NOT NULL DEFAULT 0,  -- bytes of whole lines folded in
    lines INTEGER NOT NULL DEFAULT 0,    -- whole lines in them
    torn INTEGER NOT NULL DEFAULT 0,     -- the file ends in part of a line
    header_sha256 TEXT, last_line_offset INTEGER NOT NULL DEFAULT 0, last_line_sha256 TEXT,
    -- what the covered lines say
    events INTEGER NOT NULL DEFAULT 0, turns INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,  -- lines that are not events (a torn last one aside)
    last_seq INTEGER NOT NULL DEFAULT -1,
    first_ts TEXT, last_ts TEXT,
    calls INTEGER NOT NULL DEFAULT 0, input INTEGER NOT NULL DEFAULT 0,
    cache_read INTEGER NOT NULL DEFAULT 0, cache_write INTEGER NOT NULL DEFAULT 0,
    output INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0, uncached_cost_usd REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS usage (
    session INTEGER NOT NULL REFERENCES sessions(rowid),
    seq INTEGER NOT NULL, ts TEXT NOT NULL, purpose TEXT NOT NULL, model TEXT NOT NULL,
    input INTEGER NOT NULL, cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL,
    output INTEGER NOT NULL, latency_ms INTEGER NOT NULL,
    cost_usd REAL NOT NULL, uncached_cost_usd REAL NOT NULL,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS texts (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,  -- the text_search row; never reused
    session INTEGER NOT NULL REFERENCES sessions(rowid),
    seq INTEGER NOT NULL, type TEXT NOT NULL,
    line_offset INTEGER NOT NULL              -- where its line starts in the log
);
CREATE INDEX IF NOT EXISTS texts_by_session ON texts (session, seq);
-- The words of each event (what `scribe log search` searches), not the text itself: that
-- stays in the log, at texts.line_offset. Rows of a session folded anew are left behind here and
-- never match, as the join with texts finds no row for them.
CREATE VIRTUAL TABLE IF NOT EXISTS text_search USING fts5 (
    body, content='', tokenize='unicode61 remove_diacritics 0'
);
"""


class IndexBroken(LogError):
    """The index cannot be written or asked (locked past the busy timeout, a query it refuses)."""


class _Raced(Exception):
    """Another process folded the same log since this fold began."""


@dataclass(frozen=True)
class IndexedSession:
    """One session as the index knows it: what `scribe log list` shows, no event read."""

    id: str
    path: Path
    created: str | None
    cwd: str | None
    header_problem: str | None
    is_session: bool
    session_created: str | None
    session_cwd: str | None
    model: str | None
    events: int
    turns: int
    skipped: int
    torn: bool
    first_ts: str | None
    last_ts: str | None
    figures: Figures


@dataclass
class _Fold:
    """A session's running figures while lines are folded into it."""

    values: dict[str, Any]
    base: int = -1  # the bytes the index covered when this fold last wrote (or began)
    written: int = 0  # the lines it covered then
    usage: list[tuple[Any, ...]] = field(default_factory=list)
    words: list[tuple[int, str, int, str]] = field(default_factory=list)  # seq, type, offset, body


def index_path(state: Path) -> Path:
    return state / INDEX_NAME


class LogIndex:
    """The index of one state folder. `refresh` brings sessions up to date with their logs;
    the queries read what is there."""

    def __init__(self, db: sqlite3.Connection, price: Pricer, pricing_key: str, where: str = ":memory:") -> None:
        self.db, self.price, self.pricing_key, self.where = db, price, pricing_key, where

    @classmethod
    def open(cls, state: Path, price: Pricer, pricing_key: str) -> LogIndex:
        """The index of `state`, created if missing. Where it cannot be written (a read-only
        folder), one in memory: slower, the same answers."""
        where = index_path(state)
        try:
            db = _connect(where)
        except (OSError, sqlite3.Error):
            db, where = sqlite3.connect(":memory:", isolation_level=None), ":memory:"
            _prepare(db)
        index = cls(db, price, pricing_key, str(where))
        index._check_pricing()
        return index

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> LogIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- keeping up with the logs ----------------------------------------------------------

    def refresh(self, paths: Iterable[Path]) -> None:
        for path in paths:
            self.refresh_one(path)

    def refresh_one(self, path: Path) -> None:
        try:
            info = path.stat()
        except OSError as exc:
            raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
        for _ in range(3):  # another process folding the same log at once: its fold stands
            row = self._row(path.stem)
            if row is not None and row["path"] == str(path) and row["size"] == info.st_size \
                    and row["mtime_ns"] == info.st_mtime_ns:
                return
            try:
                with path.open("rb") as fh:
                    self._fold_file(path, fh, row, info.st_mtime_ns)
                return
            except _Raced:
                continue
            except OSError as exc:
                raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
            except sqlite3.Error as exc:
                raise IndexBroken(f"cannot update the index {self.where}: {exc}") from None

    def _fold_file(self, path: Path, fh: Any, row: sqlite3.Row | None, mtime_ns: int) -> None:
        first_line = fh.readline()
        if row is None or row["covered"] == 0 or not _still_covers(fh, row, first_line):
            row = self._start_over(path, first_line)
        fold = _Fold(dict(row) | {"path": str(path)}, base=row["covered"], written=row["lines"])
        number = fold.values["lines"]
        read = LogRead(last_seq=fold.values["last_seq"])
        lines = WholeLines(fh, fold.values["covered"])
        for offset, raw in lines:
            number += 1
            skipped = len(read.problems)
            event = read_line(read, number, raw)
            _fold_line(fold, event, offset, raw, len(read.problems) > skipped, self.price)
            fold.values.update(lines=number, covered=offset + len(raw) + 1, last_seq=read.last_seq)
            if len(fold.usage) + len(fold.words) >= BATCH_LINES or number - fold.written >= BATCH_LINES:
                # mtime 0: a fold cut short here is not taken for a whole one
                self._write(fold, torn=False, size=fold.values["covered"], mtime_ns=0)
        self._write(fold, torn=bool(lines.torn), size=lines.end + len(lines.torn), mtime_ns=mtime_ns)

    def _start_over(self, path: Path, first_line: bytes) -> sqlite3.Row:
        """Forget what the index held of this session and describe its log anew from line one."""
        first = _first_record(first_line)
        created, cwd = first.get("created") if first else None, first.get("cwd") if first else None
        with self._transaction():
            old = self.db.execute("SELECT rowid FROM sessions WHERE id = ?", (path.stem,)).fetchone()
            if old is not None:
                self.db.execute("DELETE FROM usage WHERE session = ?", (old[0],))
                self.db.execute("DELETE FROM texts WHERE session = ?", (old[0],))
                self.db.execute("DELETE FROM sessions WHERE rowid = ?", (old[0],))
            self.db.execute(
                "INSERT INTO sessions (id, path, created, cwd, header_problem, header_sha256) VALUES (?,?,?,?,?,?)",
                (path.stem, str(path), created if isinstance(created, str) else None,
                 cwd if isinstance(cwd, str) else None, header_problem(first), None))
        row = self._row(path.stem)
        assert row is not None
        return row

    def _write(self, fold: _Fold, *, torn: bool, size: int, mtime_ns: int) -> None:
        v = fold.values
        with self._transaction():
            rowid = v["rowid"]
            now = self.db.execute("SELECT covered FROM sessions WHERE rowid = ?", (rowid,)).fetchone()
            if now is None or now[0] != fold.base:
                raise _Raced
            self.db.executemany("INSERT OR REPLACE INTO usage VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                                [(rowid, *u) for u in fold.usage])
            for seq, type_name, offset, body in fold.words:
                cursor = self.db.execute("INSERT INTO texts (session, seq, type, line_offset) VALUES (?,?,?,?)",
                                         (rowid, seq, type_name, offset))
                self.db.execute("INSERT INTO text_search (rowid, body) VALUES (?,?)", (cursor.lastrowid, body))
            v.update(torn=int(torn), size=size, mtime_ns=mtime_ns)
            columns = [k for k in v if k not in ("rowid", "id")]
            self.db.execute(f"UPDATE sessions SET {', '.join(f'{k} = ?' for k in columns)} WHERE rowid = ?",
                            [v[k] for k in columns] + [rowid])
        fold.usage.clear()
        fold.words.clear()
        fold.base, fold.written = v["covered"], v["lines"]

    def _check_pricing(self) -> None:
        """Costs are kept priced; under another pricing (agent/pricing.py changed) every call is
        priced anew, in log order, so the sums are what pricing each call would add up to."""
        found = self.db.execute("SELECT value FROM meta WHERE key = 'pricing'").fetchone()
        if found is not None and found[0] == self.pricing_key:
            return
        with self._transaction():
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('pricing', ?)", (self.pricing_key,))
            sessions = [r[0] for r in self.db.execute("SELECT rowid FROM sessions")]
            for rowid in sessions:
                total, priced = Figures(), []
                for seq, *rest in self.db.execute(
                        "SELECT seq, ts, purpose, model, input, cache_read, cache_write, output, latency_ms "
                        "FROM usage WHERE session = ? ORDER BY seq", (rowid,)).fetchall():
                    usage = UsageEvent(seq, *rest)
                    cost, uncached = self.price(usage)
                    total.add(usage, cost, uncached)
                    priced.append((cost, uncached, rowid, seq))
                self.db.executemany("UPDATE usage SET cost_usd = ?, uncached_cost_usd = ? "
                                    "WHERE session = ? AND seq = ?", priced)
                self.db.execute("UPDATE sessions SET cost_usd = ?, uncached_cost_usd = ? WHERE rowid = ?",
                                (total.cost_usd, total.uncached_cost_usd, rowid))

    def _transaction(self) -> Any:
        return _Immediate(self.db)

    def _row(self, session_id: str) -> sqlite3.Row | None:
        found: sqlite3.Row | None = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return found

    # -- what the index answers ------------------------------------------------------------

    def sessions(self, store: SessionStore, cwd: Path | None = None) -> tuple[list[SessionFile], list[LogError]]:
        """`store.sessions(cwd)` as the index knows them (each brought up to date first, none
        described from its file), and the logs that could not be read."""
        if not store.sessions_dir.is_dir():
            return [], []
        paths, unread = [], []
        for path in store.sessions_dir.glob("*.jsonl"):
            try:
                self.refresh_one(path)
                paths.append(path)
            except IndexBroken:
                raise
            except LogError as exc:
                unread.append(exc)
        found = []
        for path in paths:
            row = self._row(path.stem)
            assert row is not None
            found.append(SessionFile(row["id"], path, row["cwd"], row["created"], damaged=row["header_problem"],
                                     mtime=row["mtime_ns"] / 1e9))
        found.sort(key=lambda s: (s.created or "", s.id))
        if cwd is not None:
            found = [s for s in found if s.cwd == str(cwd) or (s.cwd is None and s.damaged)]
        return found, unread

    def session(self, session_id: str) -> IndexedSession | None:
        row = self._row(session_id)
        return _indexed(row) if row is not None else None

    def usage_groups(self, by: str, session_ids: list[str]) -> Iterator[tuple[str, Figures]]:
        """The calls of these sessions summed per day (local time), model or session, in order."""
        key = {"day": "date(u.ts, 'localtime')", "model": "u.model", "session": "s.id"}[by]
        order = "min(coalesce(s.created, '')), s.id" if by == "session" else "1"
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS scope (id TEXT PRIMARY KEY)")
        self.db.execute("DELETE FROM temp.scope")
        self.db.executemany("INSERT OR IGNORE INTO temp.scope VALUES (?)", [(i,) for i in session_ids])
        query = (f"SELECT {key}, count(*), sum(u.input), sum(u.cache_read), sum(u.cache_write), sum(u.output), "
                 "sum(u.cost_usd), sum(u.uncached_cost_usd) FROM usage u JOIN sessions s ON s.rowid = u.session "
                 f"JOIN temp.scope c ON c.id = s.id GROUP BY 1 ORDER BY {order}")
        for name, *counts in self.db.execute(query):
            yield str(name), Figures(*counts)

    def word_hits(self, query: str, session_ids: list[str]) -> Iterator[tuple[str, int, int]]:
        """(session id, seq, offset of its line) of every event holding all of `query`'s words, in
        the sessions' order (created, then id) and by seq."""
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS scope (id TEXT PRIMARY KEY)")
        self.db.execute("DELETE FROM temp.scope")
        self.db.executemany("INSERT OR IGNORE INTO temp.scope VALUES (?)", [(i,) for i in session_ids])
        try:
            for session_id, seq, offset in self.db.execute(
                "SELECT s.id, t.seq, t.line_offset FROM text_search f JOIN texts t ON t.rowid = f.rowid "
                "JOIN sessions s ON s.rowid = t.session JOIN temp.scope c ON c.id = s.id "
                "WHERE text_search MATCH ? ORDER BY coalesce(s.created, ''), s.id, t.seq", (query,)):
                yield session_id, seq, offset
        except sqlite3.OperationalError as exc:
            raise IndexBroken(f"cannot search the index for {query!r}: {exc}") from None


class _Immediate:
    """BEGIN IMMEDIATE ... COMMIT: the write lock is taken up front (waiting up to the busy
    timeout), so two processes folding the same log never both fold it."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Created 0600 before SQLite opens it (SQLite gives its -wal and -shm files the same mode).
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        _prepare(db)
    except sqlite3.DatabaseError:
        db.close()
        # Not a database (a broken or foreign file): the index is derived, so it starts again.
        path.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        _prepare(db)
    return db


def _prepare(db: sqlite3.Connection) -> None:
    db.row_factory = sqlite3.Row
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")  # a crash may lose the last fold: it is folded again
    if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    with _Immediate(db):
        if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return  # another process made it while this one waited
        for name in ("text_search", "texts", "usage", "sessions", "meta"):
            db.execute(f"DROP TABLE IF EXISTS {name}")
        for statement in _statements(SCHEMA):
            db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer
            buffer = ""


def _still_covers(fh: Any, row: sqlite3.Row, first_line: bytes) -> bool:
    """The log still holds, unchanged at both ends, the lines the row covers."""
    if row["header_sha256"] != _sha256(first_line):
        return False
    start, end = row["last_line_offset"], row["covered"]
    fh.seek(start)
    last = fh.read(end - start)
    fh.seek(0)
    return len(last) == end - start and _sha256(last) == row["last_line_sha256"]


def _fold_line(fold: _Fold, event: Event | None, offset: int, raw: bytes, skipped: bool, price: Pricer) -> None:
    v = fold.values
    if v["lines"] == 0:
        v["header_sha256"] = _sha256(raw + b"\n")
    v["last_line_offset"], v["last_line_sha256"] = offset, _sha256(raw + b"\n")
    if skipped:
        v["skipped"] += 1
    if event is None:
        return
    if v["events"] == 0 and isinstance(event, SessionEvent):
        v.update(is_session=1, session_created=event.created, session_cwd=event.cwd, model=event.model)
    v["events"] += 1
    v["first_ts"] = v["first_ts"] or event.ts
    v["last_ts"] = event.ts
    if isinstance(event, UserEvent):
        v["turns"] += 1
    elif isinstance(event, UsageEvent):
        cost, uncached = price(event)
        for name in ("input", "cache_read", "cache_write", "output"):
            v[name] += getattr(event, name)
        v["calls"] += 1
        v["cost_usd"] += cost
        v["uncached_cost_usd"] += uncached
        fold.usage.append((event.seq, event.ts, sys.intern(event.purpose), sys.intern(event.model), event.input,
                           event.cache_read, event.cache_write, event.output, event.latency_ms, cost, uncached))
    body = "\n".join(text for _, text in texts(event))
    if body:
        type_name = event.type_name if isinstance(event, UnknownEvent) else event.type
        fold.words.append((event.seq, type_name, offset, body))


def _indexed(row: sqlite3.Row) -> IndexedSession:
    figures = Figures(row["calls"], row["input"], row["cache_read"], row["cache_write"], row["output"],
                      row["cost_usd"], row["uncached_cost_usd"])
    return IndexedSession(row["id"], Path(row["path"]), row["created"], row["cwd"], row["header_problem"],
                          bool(row["is_session"]), row["session_created"], row["session_cwd"], row["model"],
                          row["events"], row["turns"], row["skipped"], bool(row["torn"]), row["first_ts"],
                          row["last_ts"], figures)


def _first_record(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def event_at(path: Path, offset: int) -> Event | None:
    """The event on the line that starts at `offset` of the log (where the index found it), or
    None when that line is no longer one (the log changed since the index last looked)."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            raw = fh.readline()
    except OSError as exc:
        raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not raw.endswith(b"\n"):
        return None
    return read_line(LogRead(), 0, raw[:-1])
