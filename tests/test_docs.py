"""The README is a front door, and every relative link and repository path in it and in docs/ leads somewhere.

Nothing here starts a process: it reads README.md and docs/*.md, the .gitignore files and the checkout's folders.
"""

import difflib
import os
import re
from fnmatch import fnmatch
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


# -- repository paths in code ----------------------------------------------------------------------------------
# A repository path is a token in a page's code (a `span` or a fenced block) that holds a slash and starts with a
# top-level folder of the checkout that git keeps (`harness/checkers/facts.py`, `tests/test_docs.py`, `docs/`,
# `.github/workflows/grade.yml`). Left off its end: a line (`path:12`), a pytest node (`path::test`), an anchor
# (`path#part`). A glob (`docs/regrades/*.json`) or a placeholder (`relay_under_test/mutants/<name>/`) must match
# something. Not checked: what a .gitignore names (made by bootstrap or a run, absent from a fresh clone: `.venv/`,
# `tools/bin/toxiproxy-server`, `relay_under_test/go/bin/relay`, `runs/`), paths of other trees (`path/to/relay.toml`,
# `incident/story.yaml`), and bare names, which are read against their context (`facts.py` in the layout table's row
# of harness/checkers/).
FENCE = re.compile(r"^\s*(```|~~~)")
SPAN = re.compile(r"(`+)(.+?)\1")
TOKEN = re.compile(r"[\s=\"'(),\[\]{}|]+")
TAIL = re.compile(r"(::.*|#.*|:\d+(-\d+)?)$")


def _ignores(folder: Path) -> list[str]:
    path = folder / ".gitignore"
    lines = path.read_text().splitlines() if path.is_file() else []
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def ignored(rel: str) -> bool:
    """Whether git ignores `rel` by a .gitignore of the checkout or of a folder on its way (a last match wins)."""
    parts = [p for p in rel.split("/") if p]
    verdict = False
    for depth in range(len(parts)):
        below = parts[depth:]
        for pattern in _ignores(ROOT.joinpath(*parts[:depth])):
            negated, bare = pattern.startswith("!"), pattern.lstrip("!")
            anchored, bare = "/" in bare.rstrip("/"), bare.strip("/")
            for i in range(1, len(below) + 1):
                if fnmatch("/".join(below[:i]) if anchored else below[i - 1], bare):
                    verdict = not negated
    return verdict


TOP = {p.name for p in ROOT.iterdir() if p.is_dir() and p.name != ".git" and not ignored(p.name)}


def repository_paths(page: Path) -> list[tuple[int, str]]:
    """(line, path) for each repository path in the page's code, tails left off."""
    out, fenced = [], False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        code = [line] if fenced else [m[2] for m in SPAN.finditer(line)]
        for token in (t.rstrip(".,;:") for c in code for t in TOKEN.split(c)):
            path = TAIL.sub("", token)
            if "/" in path and path.split("/")[0] in TOP and not ignored(path):
                out.append((number, path))
    return out


def exists(path: str) -> bool:
    pattern = re.sub(r"<[^<>/]+>", "*", path).rstrip("/")
    if any(c in pattern for c in "*?["):
        return any(ROOT.glob(pattern))
    return (ROOT / pattern).exists()


def fix(path: str) -> str:
    """What to write instead: the file of that name elsewhere in the checkout, or the nearest names beside it."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    moved = sorted(
        str(Path(folder, name).relative_to(ROOT))
        for folder, dirs, files in os.walk(ROOT)
        if not ignored(str(Path(folder).relative_to(ROOT))) and ".git" not in Path(folder).parts
        if name in files or name in dirs
    )
    if moved:
        return f"it is now {' or '.join(moved)}"
    parent = ROOT / path.rstrip("/")
    while not parent.is_dir():
        parent = parent.parent
    near = difflib.get_close_matches(name, [p.name for p in parent.iterdir()], n=3, cutoff=0.5)
    where = f"{parent.relative_to(ROOT)}/" if parent != ROOT else "the checkout"
    return f"write the path as it is now or drop it (in {where}: {', '.join(near) or 'no similar name'})"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_in_code_exists(page: Path):
    stale = [
        f"{page.relative_to(ROOT)}:{line}: `{path}` is not in the checkout; fix: {fix(path)}"
        for line, path in repository_paths(page)
        if not exists(path)
    ]
    assert not stale, "\n".join(stale)


def test_the_path_check_reads_paths_as_written():
    assert {p for _, p in repository_paths(README)} >= {"harness/", "scripts/bootstrap.sh", "tests/test_walls.py"}
    assert not ignored("harness/paths.py") and ignored("tools/bin/toxiproxy-server") and ignored(".venv/bin/relaychaos")
    assert ignored("relay_under_test/go/bin/relay") and ignored("relay_under_test/rust/bin/relay")
    assert not ignored("examples/incidents/oom-early-resolve/ledger.sqlite")  # a negated pattern: kept
    assert exists("docs/regrades/*.json") and exists("relay_under_test/mutants/<name>/") and not exists("docs/none.md")
