"""Assistant text as HTML: CommonMark with tables, through markdown-it-py, made safe for a page
that must never run what a log holds.

Raw HTML in the text is shown as text (`html` off), links with a scheme that runs code or reads
local files (`javascript:`, `vbscript:`, `file:`, `data:` other than images) are not made links
(markdown-it's own link validation), and images are not loaded at all: the page works offline
and a log must not make it fetch anything, so `![alt](url)` stays a plain link a person can follow.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from markdown_it import MarkdownIt


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"]).disable("image")

    def link_open(renderer: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
        # A link leaves the page: it opens apart from it and tells the other side nothing.
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        tokens[idx].attrSet("target", "_blank")
        return str(renderer.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    return md


def markdown_html(text: str) -> str:
    """Markdown to an HTML fragment in which every piece of the text is escaped."""
    return _parser().render(text)
