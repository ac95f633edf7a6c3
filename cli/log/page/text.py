"""Text from the log as the page shows it: escaped; each piece that stands beside other words
isolated from them (`<bdi>`), so a right-to-left prompt cannot pull the call count beside it
into its run and an override in a file name cannot reverse the rest of its row; and each
bidirectional control or invisible character marked as `<U+202E>` (the terminal's mark) with
its name on hover. The page's script marks text it shows with the same patterns."""

from __future__ import annotations

import re
import unicodedata
from html import escape

from ...visible import EMOJI_JOINS, INVISIBLE, invisible_runs, mark_of

_TAG = re.compile(r"(<[^>]*>)")


def _mark(char: str) -> str:
    name = unicodedata.name(char, "")
    title = f"{mark_of(char)[1:-1]} {name}".strip()
    return f'<span class="ch" title="{escape(title, quote=True)}">{escape(mark_of(char))}</span>'


def _marked_escaped(text: str) -> str:
    """`text`, already escaped, with its invisible characters marked."""
    if not INVISIBLE.search(text):
        return text
    return "".join(_mark(piece) if invisible else piece for piece, invisible in invisible_runs(text))


def marked(text: object) -> str:
    """Text from the log as HTML: escaped, its invisible characters marked."""
    return _marked_escaped(escape(str(text), quote=True))


def inline(text: object) -> str:
    """Text from the log that stands among other words: marked and isolated."""
    return f"<bdi>{marked(text)}</bdi>"


def marked_html(fragment: str) -> str:
    """An HTML fragment whose text (between its tags, already escaped) has its invisible
    characters marked; attribute values stay as they are."""
    if not INVISIBLE.search(fragment):
        return fragment
    return "".join(part if part.startswith("<") else _marked_escaped(part) for part in _TAG.split(fragment))


def patterns() -> dict[str, str]:
    """The patterns the page's script marks text with (they read the same in JavaScript)."""
    return {"invisible": INVISIBLE.pattern, "joins": EMOJI_JOINS.pattern}
