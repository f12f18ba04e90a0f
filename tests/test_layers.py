"""The package's layers, read from the source with `ast`: each package imports only from the layers below it, no
two packages import each other (even through a third), and imports sit at the top of modules.

docs/architecture.md draws the layers and says what each holds.
"""

import ast
from pathlib import Path

import pytest

from .conftest import ROOT
from .test_walls import MODULES, imports

# -- layers ----------------------------------------------------------------------------------------
# Lowest first; a module imports only from its own package or from layers below. At the bottom the typed
# records (they import nothing of relaychaos) and the programs the harness runs (fixtures, relays: nothing of
# it either); then the base, the top-level modules (errors, events, options, history, atomic, ports, ...).
# docs/architecture.md draws them.
LAYERS = (
    ("relaychaos.records", "relaychaos.fixtures", "relaychaos.relay_under_test"),
    ("relaychaos",),
    ("relaychaos.checkers",),
    ("relaychaos.sandbox",),
    ("relaychaos.stack",),
    ("relaychaos.engine",),
    ("relaychaos.reports",),
    ("relaychaos.scenarios",),
    ("relaychaos.run",),
    ("relaychaos.plugin",),
    ("relaychaos.incidents", "relaychaos.soak", "relaychaos.grading"),
    ("relaychaos.commands",),
)


def package_of(mod: str) -> str:
    """The package a module belongs to for the layers: relaychaos.<sub> for a subpackage's, else relaychaos."""
    parts = mod.split(".")
    sub = ".".join(parts[:2])
    return sub if len(parts) > 1 and sub in MODULES and MODULES[sub].name == "__init__.py" else "relaychaos"


def layer_of(package: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if package in names)


def package_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Package -> the packages its modules import (relaychaos ones), lazy and TYPE_CHECKING imports too."""
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        here = package_of(mod)
        graph.setdefault(here, set())
        graph[here] |= {package_of(i) for i in imports(path) if i in modules and package_of(i) != here}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan): each is a cycle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_packages_import_each_other_even_through_others():
    assert cycles(package_graph(MODULES)) == [], "import cycle between packages; fix: move the shared part down"


def test_the_cycle_check_finds_a_cycle_through_a_third_package():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_every_package_has_a_layer():
    assert sorted(p for p in package_graph(MODULES) if not any(p in names for names in LAYERS)) == []


@pytest.mark.parametrize("package", sorted({package_of(m) for m in MODULES}))
def test_a_package_imports_only_from_layers_below_it(package):
    up = sorted(
        f"{mod} imports {imp}"
        for mod, path in MODULES.items()
        if package_of(mod) == package
        for imp in imports(path)
        if imp in MODULES and package_of(imp) != package and layer_of(package_of(imp)) >= layer_of(package)
    )
    assert not up, f"imports upward or sideways (docs/architecture.md): {up}"


def _lazy_imports(path: Path) -> list[int]:
    """Lines of imports inside functions (not under `if TYPE_CHECKING:`) that carry no `# lazy` comment."""
    lines = path.read_text().splitlines()
    bare: list[int] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                near = lines[child.lineno - 2 : child.end_lineno]
                if not any("# lazy" in line for line in near):
                    bare.append(child.lineno)
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    walk(ast.parse("\n".join(lines)), False)
    return bare


def test_imports_are_at_the_top_of_modules_unless_one_says_why_it_is_lazy():
    """An import inside a function hides the graph from readers and tools; the few that must wait (the pytest
    plugin, loaded into every session; an SDK only one route needs) say so with a `# lazy` comment."""
    bare = [
        f"{path.relative_to(ROOT)}:{line}"
        for mod, path in MODULES.items()
        if not mod.startswith(("relaychaos.relay_under_test", "relaychaos.fixtures")) and path.name != "__main__.py"
        for line in _lazy_imports(path)
    ]
    assert not bare, f"imports inside functions without a `# lazy` reason: {bare}"
