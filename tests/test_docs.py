"""The README is a front door, and every relative link in it and in docs/ leads somewhere.

Nothing here starts a process: it reads README.md and docs/*.md.
"""

import re
from pathlib import Path

import pytest

from .conftest import ROOT

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and ![alt](target), outside code; a target may be followed by a "title"
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = ("http://", "https://", "mailto:", "#")


def _prose(text: str) -> str:
    """The text with fenced code blocks and inline code spans left out."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(_prose(page.read_text())) if not t.startswith(EXTERNAL)]


def test_the_readme_is_at_most_300_lines():
    lines = len(README.read_text().splitlines())
    assert lines <= 300, f"README.md has {lines} lines: move detail into a page under docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_an_existing_file(page: Path):
    links = relative_links(page)
    broken = [t for t in links if not (page.parent / t.split("#", 1)[0]).exists()]
    assert not broken, f"{page.relative_to(ROOT)}: links to missing files: {broken}"


def test_the_readme_links_to_every_docs_page():
    linked = {(README.parent / t.split("#", 1)[0]).resolve() for t in relative_links(README)}
    missing = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert not missing, f"README.md does not link to: {missing}"
