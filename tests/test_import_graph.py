"""The package's layers have no cycles: no two parts of `relaychaos` import each other, however indirectly.

The parts of a package are its children: of `relaychaos`, its subpackages (relaychaos.stack,
relaychaos.sandbox, relaychaos.reports, ...) and its base modules (relaychaos.history,
relaychaos.contract, ...), each taken whole, so that the package-level graph has an arrow A -> B
when any module of A imports any module of B; the same one level down, between the parts of each
subpackage (relaychaos.engine.runner and relaychaos.engine.final_phase). Every import counts, lazy
ones inside functions and those under `if TYPE_CHECKING:` too: each is a dependency of A on B.

The graph is grimp's, built in this process from the files (nothing imported, nothing started),
through the checkout's own view of the package: src/relaychaos -> harness/, with harness/fixtures,
harness/reports, ... linked to the mapped folders (pyproject.toml, [tool.setuptools.package-dir]).
"""

from __future__ import annotations

import itertools
from collections import deque

import grimp
import pytest

PACKAGE = "relaychaos"
Why = tuple[str, str, int]  # one import that makes an arrow: importer, imported, line


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE, cache_dir=None)


@pytest.fixture(scope="module")
def arrows(graph) -> dict[str, dict[tuple[str, str], Why]]:
    """package -> {(part A, part B): the first import, in name order, that makes the arrow A -> B}."""
    out: dict[str, dict[tuple[str, str], Why]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            a, b = importer.split("."), imported.split(".")
            common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
            if common is None:
                continue  # a module and a package holding it
            parent, key = ".".join(a[:common]), (".".join(a[: common + 1]), ".".join(b[: common + 1]))
            if key not in out.setdefault(parent, {}):
                lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)]
                out[parent][key] = (importer, imported, min(lines, default=0))
    return out


def shortest_cycle(start: str, succ: dict[str, set[str]]) -> list[str] | None:
    """The shortest path start -> ... -> start (breadth first, neighbours in name order), or None."""
    came: dict[str, str] = {}
    todo = deque([start])
    while todo:
        node = todo.popleft()
        for nxt in sorted(succ.get(node, ())):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [*reversed(path), start]
            if nxt not in came:
                came[nxt] = node
                todo.append(nxt)
    return None


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Each part's shortest cycle back to itself, each cycle once (starting at its first part by name), shortest first:
    pairs that import each other come first."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    found = set()
    for start in sorted(succ):
        cycle = shortest_cycle(start, succ)
        if cycle:
            ring = cycle[:-1]
            i = ring.index(min(ring))
            found.add(tuple(ring[i:] + ring[:i]))
    return [[*ring, ring[0]] for ring in sorted(found, key=lambda r: (len(r), r))]


def describe(cycle: list[str], why: dict[tuple[str, str], Why]) -> str:
    """'A <-> B: a.x imports b.y (line 3); b.z imports a (line 9)', or 'A -> B -> C -> A: ...'."""
    head = " <-> ".join(cycle[:2]) if len(cycle) == 3 else " -> ".join(cycle)
    steps = [f"{why[a, b][0]} imports {why[a, b][1]} (line {why[a, b][2]})" for a, b in itertools.pairwise(cycle)]
    return f"{head}: " + "; ".join(steps)


def found_cycles(arrows: dict[str, dict[tuple[str, str], Why]], packages: list[str]) -> list[str]:
    return [describe(c, arrows[p]) for p in packages for c in cycles(set(arrows[p]))]


def test_the_graph_sees_the_whole_package_through_the_checkout(graph, arrows):
    """The mapped folders are subpackages in the checkout's view, and imports into them are arrows (the editable
    install's import hook alone shows tools harness/ without them)."""
    mapped = {f"{PACKAGE}.{p}" for p in ("fixtures", "reports", "scenarios", "relay_under_test")}
    assert mapped <= graph.modules
    assert {"relaychaos.reports.html", "relaychaos.relay_under_test.reference.relay"} <= graph.modules
    into = {b for _, b in arrows[PACKAGE] if b in mapped}
    assert {f"{PACKAGE}.reports", f"{PACKAGE}.scenarios"} <= into, f"arrows into the mapped folders: {sorted(into)}"


def test_no_two_parts_of_the_package_import_each_other(arrows):
    found = found_cycles(arrows, [PACKAGE])
    assert not found, f"{len(found)} import cycle(s) between the parts of {PACKAGE} (break each at one arrow):\n" + (
        "\n".join(found)
    )


def test_no_two_parts_of_a_subpackage_import_each_other(arrows):
    found = found_cycles(arrows, sorted(p for p in arrows if p != PACKAGE))
    assert not found, f"{len(found)} import cycle(s) within subpackages of {PACKAGE} (break each at one arrow):\n" + (
        "\n".join(found)
    )
