"""docs/index.md documents the index for people who query it with sqlite3: every table it names
has exactly the columns it lists, in an index scribe built, and every table scribe builds is
documented there."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from scribe.context.tokens import event_tokens
from scribe.log.index import LogIndex
from scribe.log.index_db import SCHEMA_VERSION
from scribe.log.pricing import price_usage

DOC = Path(__file__).resolve().parents[2] / "docs" / "index.md"


def documented() -> dict[str, set[str]]:
    """Each `### \\`table\\`` heading of the page, and the backticked names in the first cell of
    each row of the table under it."""
    tables: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"### `(\w+)`", line)
        if heading:
            current = tables.setdefault(heading.group(1), set())
        elif line.startswith("## "):
            current = None
        elif current is not None and line.startswith("| `"):
            current.update(re.findall(r"`(\w+)`", line.split("|")[1]))
    return tables


def test_the_documented_tables_and_columns_are_the_index_s(tmp_path: Path) -> None:
    with LogIndex.open(tmp_path, price_usage, "key", event_tokens, "estimates"):
        pass
    db = sqlite3.connect(tmp_path / "index.sqlite3")
    built = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table') "
                                             "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'text_search_%'")}
    docs = documented()
    assert set(docs) == built
    for table, columns in docs.items():
        assert columns == {row[1] for row in db.execute(f"PRAGMA table_info({table})")}, table
    assert f"(currently {SCHEMA_VERSION})" in DOC.read_text(encoding="utf-8")
