"""What a file tool's change needs to be taken back: the `restore` record a write_file or
edit_file result carries into the log, and the reverse step that turns the file as the tool
left it back into what it held before (`/undo` without git).

A record names the file (`path`, as the model sees it), its sha256 after the change (`after`)
and before it (`before`, null when the tool created the file), and how to go back:
- edit_file: where the replacement landed (`at`, a character index in the text as the tool
  read it) and the two texts (`old`, `new`), so the reverse is one replacement the other way;
- write_file over a file: its earlier content (`content`, or `content_base64` when it is not
  UTF-8), unless that is over MAX_RESTORE_BYTES or holds a secret value the redactor knows
  (`withheld` says which): the log keeps no secret, and no copy of a huge file.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from scribe.tools.textio import human_bytes, sha256_bytes

# Earlier content of an overwritten file kept in the log at most; past it, that file is not undone.
MAX_RESTORE_BYTES = 1_000_000

Record = dict[str, Any]


class CannotRestore(Exception):
    """The log does not hold what the file held before, or the file is not as the tool left it."""


def for_write(name: str, previous: bytes | None, written: bytes, redact: Callable[[str], str]) -> Record:
    """The record of a write_file call; `previous` is what the file held (None: it did not exist)."""
    record: Record = {"path": name, "after": sha256_bytes(written),
                      "before": None if previous is None else sha256_bytes(previous)}
    if previous is None:
        return record
    if len(previous) > MAX_RESTORE_BYTES:
        record["withheld"] = f"its earlier content ({human_bytes(len(previous))}) is over the " \
                             f"{human_bytes(MAX_RESTORE_BYTES)} the log keeps"
        return record
    try:
        text = previous.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    shown = text if text is not None else previous.decode("latin-1")
    if redact(shown) != shown:
        record["withheld"] = "its earlier content holds a secret value, which the log never keeps"
    elif text is not None:
        record["content"] = text
    else:
        record["content_base64"] = base64.b64encode(previous).decode("ascii")
    return record


def for_edit(name: str, before: bytes, after: bytes, at: int, old: str, new: str) -> Record:
    """The record of an edit_file call that replaced `old` at character `at` with `new`."""
    return {"path": name, "after": sha256_bytes(after), "before": sha256_bytes(before),
            "at": at, "old": old, "new": new}


def reverse(record: Record, current: bytes) -> bytes | None:
    """What the file held before the change `record` describes, given `current`, what it holds
    as the tool left it (checked by hash). None: the change created the file. Raises
    CannotRestore when the log lacks what is needed or the file is not as the record says."""
    path = str(record.get("path", ""))
    if sha256_bytes(current) != record.get("after"):
        raise CannotRestore(f"{path} changed since scribe wrote it")
    if record.get("before") is None:
        return None
    if "withheld" in record:
        raise CannotRestore(f"{path}: {record['withheld']}")
    if isinstance(record.get("at"), int) and isinstance(record.get("old"), str) and isinstance(record.get("new"), str):
        text = current.decode("utf-8", errors="surrogateescape")
        at, old, new = record["at"], record["old"], record["new"]
        if text[at:at + len(new)] != new:
            raise CannotRestore(f"{path}: the log's record of the edit does not match the file")
        previous = (text[:at] + old + text[at + len(new):]).encode("utf-8", errors="surrogateescape")
    elif isinstance(record.get("content"), str):
        previous = record["content"].encode("utf-8")
    elif isinstance(record.get("content_base64"), str):
        try:
            previous = base64.b64decode(record["content_base64"], validate=True)
        except (binascii.Error, ValueError):
            raise CannotRestore(f"{path}: the log's copy of its earlier content is damaged") from None
    else:
        raise CannotRestore(f"{path}: the log holds no earlier content for it")
    if sha256_bytes(previous) != record["before"]:
        raise CannotRestore(f"{path}: the log's record does not give back what it held before")
    return previous
