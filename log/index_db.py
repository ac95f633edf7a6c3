"""The index's SQLite file: its tables (documented in docs/index.md), how it is opened (WAL,
a busy timeout, created 0600 in a 0700 folder) and made anew when it is of another version or
not a database at all. What goes into it is log/index.py's."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

INDEX_NAME = "index.sqlite3"
# Bumped when the tables change: an index of another version is dropped and rebuilt.
SCHEMA_VERSION = 7
BUSY_TIMEOUT_MS = 10_000
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
    parent TEXT,                         -- a sub-agent's: the session whose task call started it
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
    -- dollars of the priced calls; `unpriced` counts the calls of models with no price
    cost_usd REAL NOT NULL DEFAULT 0, uncached_cost_usd REAL NOT NULL DEFAULT 0,
    unpriced INTEGER NOT NULL DEFAULT 0,
    -- what `scribe log stats` says of memory: observation and reflection events and their tokens,
    -- side calls kept and failed per purpose with the last failure's message (log/health.py)
    observations INTEGER NOT NULL DEFAULT 0, observation_tokens INTEGER NOT NULL DEFAULT 0,
    raw_tokens INTEGER NOT NULL DEFAULT 0,  -- estimated tokens of the events the observations cover
    reflections INTEGER NOT NULL DEFAULT 0, reflection_tokens INTEGER NOT NULL DEFAULT 0,
    observer_made INTEGER NOT NULL DEFAULT 0, observer_failed INTEGER NOT NULL DEFAULT 0,
    observer_last_failure TEXT,
    reflector_made INTEGER NOT NULL DEFAULT 0, reflector_failed INTEGER NOT NULL DEFAULT 0,
    reflector_last_failure TEXT,
    curator_made INTEGER NOT NULL DEFAULT 0, curator_failed INTEGER NOT NULL DEFAULT 0,
    curator_last_failure TEXT,
    last_failure TEXT,                   -- the latest failure of any side call
    model_free INTEGER NOT NULL DEFAULT 0, -- observations and reflections made without a model
    left_out INTEGER NOT NULL DEFAULT 0, -- turns memory could not make room for (left_out events)
    last_left_out TEXT                   -- why, the last time
);
CREATE TABLE IF NOT EXISTS usage (
    session INTEGER NOT NULL REFERENCES sessions(rowid),
    seq INTEGER NOT NULL, ts TEXT NOT NULL, purpose TEXT NOT NULL, model TEXT NOT NULL,
    input INTEGER NOT NULL, cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL,
    output INTEGER NOT NULL, latency_ms INTEGER NOT NULL,
    server TEXT,                             -- the server, when not Anthropic's API
    cost_usd REAL, uncached_cost_usd REAL,   -- NULL: the model has no price
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;
-- The calls summed per quarter hour (UTC), model and purpose, kept as they are folded: totals
-- per day in any time zone (every zone's offset is a whole number of quarter hours) without
-- going through every call.
CREATE TABLE IF NOT EXISTS usage_quarters (
    session INTEGER NOT NULL REFERENCES sessions(rowid),
    quarter TEXT NOT NULL,               -- 'YYYY-MM-DDTHH:MM', MM one of 00 15 30 45
    model TEXT NOT NULL, purpose TEXT NOT NULL,
    calls INTEGER NOT NULL, input INTEGER NOT NULL, cache_read INTEGER NOT NULL,
    cache_write INTEGER NOT NULL, output INTEGER NOT NULL,
    cost_usd REAL NOT NULL, uncached_cost_usd REAL NOT NULL, unpriced INTEGER NOT NULL,
    PRIMARY KEY (session, quarter, model, purpose)
) WITHOUT ROWID;
-- The calls summed per purpose, each sum added to one call at a time in log order (as
-- `scribe log stats` adds them, so its dollars agree to the last digit).
CREATE TABLE IF NOT EXISTS usage_purposes (
    session INTEGER NOT NULL REFERENCES sessions(rowid),
    purpose TEXT NOT NULL,
    calls INTEGER NOT NULL, input INTEGER NOT NULL, cache_read INTEGER NOT NULL,
    cache_write INTEGER NOT NULL, output INTEGER NOT NULL,
    cost_usd REAL NOT NULL, uncached_cost_usd REAL NOT NULL, unpriced INTEGER NOT NULL,
    PRIMARY KEY (session, purpose)
) WITHOUT ROWID;
-- Each event's estimated prompt tokens (context/tokens.py), the last event of a seq winning;
-- events estimated at 0 are left out unless they replace another of their seq.
CREATE TABLE IF NOT EXISTS event_tokens (
    session INTEGER NOT NULL REFERENCES sessions(rowid),
    seq INTEGER NOT NULL, tokens INTEGER NOT NULL,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;
-- One row per observation event: the seqs it stands for.
CREATE TABLE IF NOT EXISTS observed (
    session INTEGER NOT NULL REFERENCES sessions(rowid),
    seq INTEGER NOT NULL, seq_from INTEGER NOT NULL, seq_to INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS observed_by_session ON observed (session);
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


def index_path(state: Path) -> Path:
    return state / INDEX_NAME


class Immediate:
    """BEGIN IMMEDIATE ... COMMIT: the write lock is taken up front (waiting up to the busy
    timeout), so two processes folding the same log never both fold it."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Created 0600 before SQLite opens it (SQLite gives its -wal and -shm files the same mode).
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        prepare(db)
    except sqlite3.DatabaseError:
        db.close()
        # Not a database (a broken or foreign file): the index is derived, so it starts again.
        path.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        prepare(db)
    return db


def prepare(db: sqlite3.Connection) -> None:
    db.row_factory = sqlite3.Row
    db.create_function("quarter", 1, quarter_of, deterministic=True)
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")  # a crash may lose the last fold: it is folded again
    if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
        return
    with Immediate(db):
        if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return  # another process made it while this one waited
        for name in ("text_search", "texts", "observed", "event_tokens", "usage_purposes", "usage_quarters",
                     "usage", "sessions", "meta"):
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


def quarter_of(ts: str) -> str:
    """The quarter hour (UTC) a log's timestamp falls in; the timestamp itself if it is not one."""
    try:
        return f"{ts[:14]}{int(ts[14:16]) // 15 * 15:02d}"
    except ValueError:
        return ts
