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

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.log.events import Event, UsageEvent
from scribe.log.figures import Figures, Pricer
from scribe.log.filelock import LockWaitedTooLong, held
from scribe.log.index_db import Immediate, connect, index_path, prepare, quarter_of
from scribe.log.index_fold import Fold, first_record, fold_line, still_covers
from scribe.log.index_stats import Estimate, IndexedStats, StatsFold, read_stats, write_purposes
from scribe.log.jsonl import LogError, LogRead, read_line
from scribe.log.store import SessionFile, SessionStore, header_problem
from scribe.log.whole_lines import WholeLines

# Usage rows priced anew per query when the pricing changed (memory is one batch, not one session).
REPRICE_BATCH = 10_000
# The columns of `sessions` a listing reads, as plain tuples (a sqlite3.Row finds a column by
# name by going through the names: ten thousand rows of 25 took a third of a second): what
# tells a row is fresh, then IndexedSession's fields in order, its figures last.
LISTED = ("size", "mtime_ns", "path", "id", "created", "cwd", "header_problem", "is_session", "session_created",
          "session_cwd", "model", "parent", "events", "turns", "skipped", "torn", "first_ts", "last_ts", "calls", "input",
          "cache_read", "cache_write", "output", "cost_usd", "uncached_cost_usd", "unpriced")
_LISTING = f"SELECT {', '.join(LISTED)} FROM sessions"

# Lines folded per transaction: the writer lock is never held for long, and memory stays flat.
BATCH_LINES = 20_000
# Beside the index: held by the process folding a log (see refresh_one).
FOLD_LOCK = "index.lock"
FOLD_WAIT_S = 900.0  # a 1 GB log takes 2.5 CPU minutes to fold (docs/performance-at-scale.md)
FOLD_TRIES = 3

class IndexBroken(LogError):
    """The index cannot be written or asked (locked past the busy timeout, a query it refuses)."""


class _Raced(Exception):
    """Another process folded the same log since this fold began."""


@dataclass(frozen=True)
class IndexedSession:
    """One session as the index knows it: what `scribe log list` shows, no event read."""

    id: str
    path: str  # of the log, as the index last read it
    created: str | None
    cwd: str | None
    header_problem: str | None
    is_session: bool
    session_created: str | None
    session_cwd: str | None
    model: str | None
    parent: str | None  # a sub-agent's: the session that started it
    events: int
    turns: int
    skipped: int
    torn: bool
    first_ts: str | None
    last_ts: str | None
    figures: Figures


class LogIndex:
    """The index of one state folder. `refresh` brings sessions up to date with their logs;
    the queries read what is there."""

    def __init__(self, db: sqlite3.Connection, price: Pricer, pricing_key: str, estimate: Estimate,
                 where: str = ":memory:") -> None:
        self.db, self.price, self.pricing_key, self.estimate, self.where = db, price, pricing_key, estimate, where
        self._known: dict[str, tuple[Any, ...]] = {}  # LISTED of each session, as `sessions` last read them

    @classmethod
    def open(cls, state: Path, price: Pricer, pricing_key: str, estimate: Estimate, estimate_key: str) -> LogIndex:
        """The index of `state`, created if missing. Where it cannot be written (a read-only
        folder), one in memory: slower, the same answers. `estimate` gives each event's token
        estimate; `estimate_key` names how it estimates (another: every session is folded anew)."""
        path = index_path(state)
        where = str(path)
        try:
            db = connect(path)
        except (OSError, sqlite3.Error):
            db, where = sqlite3.connect(":memory:", isolation_level=None), ":memory:"
            prepare(db)
        index = cls(db, price, pricing_key, estimate, where)
        index._check_estimates(estimate_key)
        index._check_pricing()
        return index

    @property
    def in_memory(self) -> bool:
        return self.where == ":memory:"

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
        self._known.pop(path.stem, None)
        if self._is_fresh(path, info):
            return
        # Processes folding at once would start each other's folds over (each sees the other's
        # half-made row as stale): they fold one at a time, and the next finds the log folded.
        with self._folding():
            for _ in range(FOLD_TRIES):  # a writer without the lock (a stale lock file) raced it
                if self._is_fresh(path, info):
                    return
                try:
                    with path.open("rb") as fh:
                        self._fold_file(path, fh, self._row(path.stem), info.st_mtime_ns)
                    return
                except _Raced:
                    continue
                except OSError as exc:
                    raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
                except sqlite3.Error as exc:
                    raise IndexBroken(f"cannot update the index {self.where}: {exc}") from None
        raise IndexBroken(f"cannot update the index {self.where}: other processes kept folding {path.name} "
                          "at the same time")

    def _is_fresh(self, path: Path, info: os.stat_result) -> bool:
        row = self._row(path.stem)
        return row is not None and _fresh(row["size"], row["mtime_ns"], row["path"], str(path), info)

    def _folding(self) -> ExitStack:
        """The index's fold lock, held for as long as one log is folded. Where it cannot be had (an
        index in memory has no other process; a lock file that is a link is refused; a holder
        past the wait), the fold goes ahead without it, and `_write` catches a race."""
        stack = ExitStack()
        if not self.in_memory:
            try:
                stack.enter_context(held(Path(self.where).with_name(FOLD_LOCK), FOLD_WAIT_S,
                                         "another scribe reading the logs"))
            except (OSError, LockWaitedTooLong):
                pass  # unlocked, as described above
        return stack

    def _fold_file(self, path: Path, fh: Any, row: sqlite3.Row | None, mtime_ns: int) -> None:
        first_line = fh.readline()
        if row is None or row["covered"] == 0 or not still_covers(fh, row, first_line):
            row = self._start_over(path, first_line)
        fold = Fold(dict(row) | {"path": str(path)}, base=row["covered"], written=row["lines"])
        fold.stats = StatsFold.resume(self.db, fold.values)
        number = fold.values["lines"]
        read = LogRead(last_seq=fold.values["last_seq"])
        lines = WholeLines(fh, fold.values["covered"])
        for offset, raw in lines:
            number += 1
            skipped, seen_seq = len(read.problems), read.last_seq
            event = read_line(read, number, raw)
            fold_line(fold, event, offset, raw, len(read.problems) > skipped, self.price)
            if event is not None:
                fold.stats.add(fold.values, event, self.estimate, fold.priced, seen_seq)
            fold.values.update(lines=number, covered=offset + len(raw) + 1, last_seq=read.last_seq)
            if len(fold.usage) + len(fold.words) >= BATCH_LINES or number - fold.written >= BATCH_LINES:
                # mtime 0: a fold cut short here is not taken for a whole one
                self._write(fold, torn=False, size=fold.values["covered"], mtime_ns=0)
        self._write(fold, torn=bool(lines.torn), size=lines.end + len(lines.torn), mtime_ns=mtime_ns)

    def _start_over(self, path: Path, first_line: bytes) -> sqlite3.Row:
        """Forget what the index held of this session and describe its log anew from line one."""
        first = first_record(first_line)
        created, cwd = first.get("created") if first else None, first.get("cwd") if first else None
        with self._transaction():
            old = self.db.execute("SELECT rowid FROM sessions WHERE id = ?", (path.stem,)).fetchone()
            if old is not None:
                self.db.execute("DELETE FROM usage WHERE session = ?", (old[0],))
                self.db.execute("DELETE FROM usage_quarters WHERE session = ?", (old[0],))
                for table in ("texts", "usage_purposes", "event_tokens", "observed"):
                    self.db.execute(f"DELETE FROM {table} WHERE session = ?", (old[0],))
                self.db.execute("DELETE FROM sessions WHERE rowid = ?", (old[0],))
            self.db.execute(
                "INSERT INTO sessions (id, path, created, cwd, header_problem, header_sha256) VALUES (?,?,?,?,?,?)",
                (path.stem, str(path), created if isinstance(created, str) else None,
                 cwd if isinstance(cwd, str) else None, header_problem(first), None))
        row = self._row(path.stem)
        assert row is not None
        return row

    def _write(self, fold: Fold, *, torn: bool, size: int, mtime_ns: int) -> None:
        v = fold.values
        with self._transaction():
            rowid = v["rowid"]
            now = self.db.execute("SELECT covered FROM sessions WHERE rowid = ?", (rowid,)).fetchone()
            if now is None or now[0] != fold.base:
                raise _Raced
            self.db.executemany("INSERT OR REPLACE INTO usage VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                [(rowid, *u) for u in fold.usage])
            self.db.executemany(
                "INSERT INTO usage_quarters VALUES (?,?,?,?,1,?,?,?,?,?,?,?) ON CONFLICT DO UPDATE SET "
                "calls = calls + 1, input = input + excluded.input, cache_read = cache_read + excluded.cache_read, "
                "cache_write = cache_write + excluded.cache_write, output = output + excluded.output, "
                "cost_usd = cost_usd + excluded.cost_usd, uncached_cost_usd = uncached_cost_usd + "
                "excluded.uncached_cost_usd, unpriced = unpriced + excluded.unpriced",
                [(rowid, quarter_of(u[1]), u[3], u[2], *u[4:8], u[10] or 0.0, u[11] or 0.0, int(u[10] is None))
                 for u in fold.usage])
            for seq, type_name, offset, body in fold.words:
                cursor = self.db.execute("INSERT INTO texts (session, seq, type, line_offset) VALUES (?,?,?,?)",
                                         (rowid, seq, type_name, offset))
                self.db.execute("INSERT INTO text_search (rowid, body) VALUES (?,?)", (cursor.lastrowid, body))
            assert fold.stats is not None
            fold.stats.write(self.db, v)
            v.update(torn=int(torn), size=size, mtime_ns=mtime_ns)
            columns = [k for k in v if k not in ("rowid", "id")]
            self.db.execute(f"UPDATE sessions SET {', '.join(f'{k} = ?' for k in columns)} WHERE rowid = ?",
                            [v[k] for k in columns] + [rowid])
        fold.usage.clear()
        fold.words.clear()
        fold.base, fold.written = v["covered"], v["lines"]

    def _check_pricing(self) -> None:
        """Costs are kept priced; under another pricing (log/pricing.py changed) every call is
        priced anew, in log order, so the sums are what pricing each call would add up to."""
        found = self.db.execute("SELECT value FROM meta WHERE key = 'pricing'").fetchone()
        if found is not None and found[0] == self.pricing_key:
            return
        with self._transaction():
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('pricing', ?)", (self.pricing_key,))
            sessions = [r[0] for r in self.db.execute("SELECT rowid FROM sessions")]
            for rowid in sessions:
                total, purposes = Figures(), dict[str, Figures]()
                after = -1
                while True:  # a batch at a time: a session of a million calls holds one batch of them
                    batch = self.db.execute(
                        "SELECT seq, ts, purpose, model, input, cache_read, cache_write, output, latency_ms, "
                        "server FROM usage WHERE session = ? AND seq > ? ORDER BY seq LIMIT ?",
                        (rowid, after, REPRICE_BATCH)).fetchall()
                    if not batch:
                        break
                    priced = []
                    for seq, ts, purpose, model, given, read, written, output, latency_ms, server in batch:
                        usage = UsageEvent(seq, ts, purpose, model, given, read, written, output, latency_ms,
                                           server=server)
                        cost, uncached = self.price(usage)
                        total.add(usage.tokens, cost, uncached)
                        purposes.setdefault(usage.purpose, Figures()).add(usage.tokens, cost, uncached)
                        priced.append((cost, uncached, rowid, seq))
                    self.db.executemany("UPDATE usage SET cost_usd = ?, uncached_cost_usd = ? "
                                        "WHERE session = ? AND seq = ?", priced)
                    after = batch[-1][0]
                write_purposes(self.db, rowid, purposes)
                self.db.execute("UPDATE sessions SET cost_usd = ?, uncached_cost_usd = ?, unpriced = ? WHERE rowid = ?",
                                (total.cost_usd, total.uncached_cost_usd, total.unpriced, rowid))
                self.db.execute("DELETE FROM usage_quarters WHERE session = ?", (rowid,))
                self.db.execute(
                    "INSERT INTO usage_quarters SELECT session, quarter(ts), model, purpose, count(*), sum(input), "
                    "sum(cache_read), sum(cache_write), sum(output), total(cost_usd), total(uncached_cost_usd), "
                    "sum(cost_usd IS NULL) FROM usage WHERE session = ? GROUP BY 2, 3, 4", (rowid,))

    def _check_estimates(self, key: str) -> None:
        """Token estimates made another way are not summed with these: every session is folded anew."""
        def made_so() -> bool:
            found = self.db.execute("SELECT value FROM meta WHERE key = 'estimates'").fetchone()
            return found is not None and found[0] == key

        if made_so():
            return
        with self._transaction():
            if made_so():
                return  # another process made them so while this one waited
            for table in ("usage", "usage_quarters", "usage_purposes", "event_tokens", "observed", "texts", "sessions"):
                self.db.execute(f"DELETE FROM {table}")
            self.db.execute("INSERT INTO text_search (text_search) VALUES ('delete-all')")
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('estimates', ?)", (key,))

    def _transaction(self) -> Any:
        return Immediate(self.db)

    def _row(self, session_id: str) -> sqlite3.Row | None:
        found: sqlite3.Row | None = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return found

    # -- what the index answers ------------------------------------------------------------

    def sessions(self, store: SessionStore, cwd: Path | None = None) -> tuple[list[SessionFile], list[LogError]]:
        """`store.sessions(cwd)` as the index knows them (each brought up to date first, none
        described from its file), and the logs that could not be read. One query reads every
        row; only a log whose size or mtime moved is opened."""
        if not store.sessions_dir.is_dir():
            return [], []
        listing = self.db.cursor()
        listing.row_factory = None
        known = {row[3]: row for row in listing.execute(_LISTING)}
        found, unread = [], []
        for name, where in store.log_files():
            row = known.get(name)
            try:
                if row is None or not _fresh(row[0], row[1], row[2], where, os.stat(where)):
                    self.refresh_one(Path(where))
                    row = known[name] = self._listed(name)
            except IndexBroken:
                raise
            except (LogError, OSError) as exc:
                unread.append(exc if isinstance(exc, LogError) else LogError(f"cannot read {where}: {exc.strerror}"))
                continue
            assert row is not None
            mtime_ns, _, session_id, created, started_in, header = row[1:7]
            found.append(SessionFile(session_id, Path(where), started_in, created, damaged=header,
                                     mtime=mtime_ns / 1e9))
        self._known = known
        found.sort(key=lambda s: (s.created or "", s.id))
        if cwd is not None:
            found = [s for s in found if s.cwd == str(cwd) or (s.cwd is None and s.damaged)]
        return found, unread

    def session(self, session_id: str) -> IndexedSession | None:
        row = self._known.get(session_id) or self._listed(session_id)
        return _indexed(row) if row is not None else None

    def _listed(self, session_id: str) -> tuple[Any, ...] | None:
        listing = self.db.cursor()
        listing.row_factory = None
        found: tuple[Any, ...] | None = listing.execute(f"{_LISTING} WHERE id = ?", (session_id,)).fetchone()
        return found

    def children(self, session_id: str) -> list[IndexedSession]:
        """The sessions a session's task calls started (its sub-agents), oldest first, as far as
        the index has folded their logs (`sessions` brings them up to date)."""
        listing = self.db.cursor()
        listing.row_factory = None
        rows = listing.execute(f"{_LISTING} WHERE parent = ? ORDER BY created, id", (session_id,)).fetchall()
        return [_indexed(row) for row in rows]

    def stats(self, session_id: str) -> IndexedStats | None:
        """What `scribe log stats` shows of a session, as far as the index covers its log."""
        row = self._row(session_id)
        return read_stats(self.db, row) if row is not None else None

    def usage_groups(self, by: str, session_ids: list[str]) -> Iterator[tuple[str, Figures]]:
        """The calls of these sessions summed per day (local time), model or session, in order."""
        key = {"day": "date(u.quarter, 'localtime')", "model": "u.model", "session": "s.id"}[by]
        order = "min(coalesce(s.created, '')), s.id" if by == "session" else "1"
        self._scope(session_ids)
        query = (f"SELECT {key}, sum(u.calls), sum(u.input), sum(u.cache_read), sum(u.cache_write), sum(u.output), "
                 "sum(u.cost_usd), sum(u.uncached_cost_usd), sum(u.unpriced) FROM usage_quarters u "
                 "JOIN sessions s ON s.rowid = u.session "
                 f"JOIN temp.scope c ON c.id = s.id GROUP BY 1 ORDER BY {order}")
        for name, *counts in self.db.execute(query):
            yield str(name), Figures.of_row(*counts)

    def _scope(self, session_ids: list[str]) -> None:
        """The sessions a query joins with (temp.scope): thousands of ids are no SQL text."""
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS scope (id TEXT PRIMARY KEY)")
        self.db.execute("DELETE FROM temp.scope")
        self.db.executemany("INSERT OR IGNORE INTO temp.scope VALUES (?)", [(i,) for i in session_ids])

    def word_hits(self, query: str, session_ids: list[str]) -> Iterator[tuple[str, int, int]]:
        """(session id, seq, offset of its line) of every event holding all of `query`'s words, in
        the sessions' order (created, then id) and by seq."""
        self._scope(session_ids)
        try:
            yield from (tuple(row) for row in self.db.execute(
                "SELECT s.id, t.seq, t.line_offset FROM text_search f JOIN texts t ON t.rowid = f.rowid "
                "JOIN sessions s ON s.rowid = t.session JOIN temp.scope c ON c.id = s.id "
                "WHERE text_search MATCH ? ORDER BY coalesce(s.created, ''), s.id, t.seq", (query,)))
        except sqlite3.OperationalError as exc:
            raise IndexBroken(f"cannot search the index for {query!r}: {exc}") from None


def _fresh(size: int, mtime_ns: int, recorded: str, path: str, info: os.stat_result) -> bool:
    """The row describes the file as it is: same place, size and mtime."""
    return size == info.st_size and mtime_ns == info.st_mtime_ns and recorded == path


def _indexed(row: tuple[Any, ...]) -> IndexedSession:
    """An IndexedSession of a LISTED row."""
    (_, _, path, session_id, created, cwd, header, is_session, session_created, session_cwd, model, parent, events,
     turns, skipped, torn, first_ts, last_ts, *figures) = row
    return IndexedSession(session_id, path, created, cwd, header, bool(is_session), session_created, session_cwd,
                          model, parent, events, turns, skipped, bool(torn), first_ts, last_ts, Figures.of_row(*figures))


class EventsAt:
    """The events on the lines where the index found them, read back from their logs (one
    open file per log): `at(path, offset)` is None when that line is no longer an event (the
    log changed since the index last looked)."""

    def __init__(self) -> None:
        self._open: dict[Path, Any] = {}

    def at(self, path: Path, offset: int) -> Event | None:
        try:
            fh = self._open.get(path) or self._open.setdefault(path, path.open("rb"))
            fh.seek(offset)
            raw = fh.readline()
        except OSError as exc:
            raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
        if not raw.endswith(b"\n"):
            return None
        return read_line(LogRead(), 0, raw[:-1])

    def __enter__(self) -> EventsAt:
        return self

    def __exit__(self, *exc: object) -> None:
        for fh in self._open.values():
            fh.close()
