"""A fetched HTML page as markdown the model reads: the page's main content (its `<main>` or
`<article>` when it has one), without scripts, styles, forms, navigation, headers and footers,
through markdownify (on BeautifulSoup with Python's own HTML parser: no compiled parser to
install). Both are imported only when a page is read."""

from __future__ import annotations

import re

# Elements that are never content: code, styling, embedded objects, page furniture.
_DROPPED = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "form",
            "button", "input", "select", "textarea", "nav", "header", "footer", "aside", "head", "link", "meta")


def html_to_markdown(html: str) -> str:
    """The page's title as a heading, then its main content as markdown."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for element in soup(_DROPPED):
        element.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    text = MarkdownConverter(heading_style="ATX", bullets="-", strip=["img"]).convert_soup(root)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return f"# {title}\n\n{text}" if title and title not in text[:200] else text
