"""The README and docs/ are the project's front door and manual: every link in them leads
somewhere, the README stays short, and they describe the project, not the history of its work."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target): a markdown link; images and reference-style links are not used here.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to '-'."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def _links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z]+:", target):  # https:, mailto: – not checked offline
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_the_readme_is_a_front_door_not_the_manual() -> None:
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= 15_000, len(readme)
    linked = {target.partition("#")[0] for target in _links(ROOT / "README.md")}
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, f"docs pages the README does not lead to: {sorted(pages - linked)}"


# Words about the work rather than the project: a reader cannot follow "before this wave".
HISTORY = re.compile(r"\bwaves?\b|\bissue \d+|\bissue #?\d+|before this (change|wave|round)", re.IGNORECASE)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_speak_of_the_project_not_its_history(page: Path) -> None:
    hits = [m.group(0) for m in HISTORY.finditer(page.read_text(encoding="utf-8"))]
    assert not hits, f"{page.name}: {hits}"


def test_the_changelog_has_one_list_per_kind_under_each_release() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for release in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        kinds = re.findall(r"^### (\w+)", release, re.MULTILINE)
        assert len(kinds) == len(set(kinds)), f"{release.splitlines()[0]}: {kinds}"
        assert set(kinds) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_every_setting_is_in_the_configuration_page() -> None:
    """Each field of Settings has a row of its own in docs/configuration.md's table."""
    from scribe.settings.values import FIELDS

    rows = {line.split("|")[1].strip().strip("`") for line in (ROOT / "docs" / "configuration.md").read_text().splitlines()
            if line.startswith("| `")}
    assert sorted(set(FIELDS) - rows) == []
