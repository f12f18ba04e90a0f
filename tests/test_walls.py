"""The architecture's walls, read from the source with `ast`: who may import whom.

- The checkers are pure: nothing they import (directly or through other relaychaos
  modules) starts a process or does I/O, and they render nothing.
- The relays under test and the fixtures are programs the harness runs: they import
  nothing of the harness.
- The reports render histories and results: they never touch the stack.
- The engine drives the stack: it imports neither the scenarios nor the reports.
- Sizes: no module over 400 lines, no function over 60.
"""

import ast
import functools
from pathlib import Path

import pytest

from .conftest import ROOT

# relaychaos.<subpackage> -> its folder in the checkout (harness/ is relaychaos itself)
FOLDERS = {
    "fixtures": "fixtures",
    "reports": "reports",
    "scenarios": "scenarios",
    "relay_under_test": "relay_under_test",
}
IO_MODULES = {
    "subprocess",
    "socket",
    "sqlite3",
    "os",
    "shutil",
    "asyncio",
    "aiohttp",
    "requests",
    "urllib",
    "http",
    "multiprocessing",
    "signal",
    "docker",
    "toxiproxy",
    "tempfile",
    "ctypes",
    "io",
    "pathlib",
}
IMPURE = (
    "relaychaos.stack",
    "relaychaos.engine",
    "relaychaos.run.chaos",
    "relaychaos.commands.cli",
    "relaychaos.plugin.hooks",
    "relaychaos.reports",
    "relaychaos.paths",
    "relaychaos.fixtures",
    "relaychaos.scenarios",
)


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    parts = ["relaychaos"] + (parts[1:] if parts[0] == "harness" else parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    out = {}
    for top in ["harness", *FOLDERS.values()]:
        for path in (ROOT / top).rglob("*.py"):
            out[module_name(path)] = path
    return out


MODULES = modules()


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a file's syntax tree, parsed and walked once per session: the walls read each file many times."""
    return tuple(ast.walk(ast.parse(path.read_text())))


@functools.cache
def imports(path: Path) -> frozenset[str]:
    """Every module a file imports, relative imports resolved, at any depth of the file (lazy ones too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES}
    return frozenset(out)


def closure(start: str) -> set[str]:
    """Every relaychaos module reachable from `start` by imports, and every outside module they import."""
    seen, todo, outside = set(), [start], set()
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        for imp in imports(MODULES[mod]):
            if imp in MODULES:
                todo.append(imp)
            elif not imp.startswith("relaychaos"):
                outside.add(imp.split(".")[0])
    return seen | outside


def under(prefix: str) -> list[str]:
    return sorted(m for m in MODULES if m == prefix or m.startswith(prefix + "."))


@pytest.mark.parametrize("mod", under("relaychaos.checkers"))
def test_the_checkers_are_pure_functions_of_a_history(mod):
    reached = closure(mod)
    assert not reached & IO_MODULES, f"{mod} reaches I/O: {sorted(reached & IO_MODULES)}"
    impure = sorted(m for m in reached if m.startswith(IMPURE))
    assert not impure, f"{mod} reaches {impure}"


@pytest.mark.parametrize("mod", under("relaychaos.relay_under_test") + under("relaychaos.fixtures"))
def test_relays_and_fixtures_import_nothing_of_the_harness(mod):
    own = "relaychaos.relay_under_test" if mod.startswith("relaychaos.relay_under_test") else "relaychaos.fixtures"
    foreign = [
        i
        for i in imports(MODULES[mod])
        if (i.startswith("relaychaos") and not i.startswith(own))
        or i.split(".")[0] in ("harness", "fixtures", "reports", "scenarios", "relay_under_test")
    ]
    assert not foreign, f"{mod} imports {foreign}"


@pytest.mark.parametrize("mod", under("relaychaos.reports"))
def test_the_reports_never_touch_the_stack(mod):
    assert not [m for m in closure(mod) if m.startswith(("relaychaos.stack", "relaychaos.engine.runner"))]


@pytest.mark.parametrize("mod", under("relaychaos.engine"))
def test_the_engine_imports_neither_scenarios_nor_reports(mod):
    bad = [m for m in imports(MODULES[mod]) if m.startswith(("relaychaos.scenarios", "relaychaos.reports"))]
    assert not bad, f"{mod} imports {bad}"


def test_the_walls_test_sees_the_whole_package():
    assert {
        "relaychaos.checkers.facts",
        "relaychaos.engine.runner",
        "relaychaos.stack.world",
        "relaychaos.reports.incident",
        "relaychaos.relay_under_test.reference.relay",
    } <= set(MODULES)


def _sizes():
    for mod, path in sorted(MODULES.items()):
        text = path.read_text()
        yield (
            mod,
            path,
            len(text.splitlines()),
            [
                (n.name, n.end_lineno - n.lineno + 1)
                for n in _nodes(path)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            ],
        )


def test_no_module_over_400_lines_and_no_function_over_60():
    tests = [(p.stem, p, len(p.read_text().splitlines()), []) for p in (ROOT / "tests").glob("*.py")]
    big = [f"{p.relative_to(ROOT)}: {n} lines" for _, p, n, _ in list(_sizes()) + tests if n > 400]
    long = [f"{p.relative_to(ROOT)}: {f}() {n} lines" for _, p, _, fs in _sizes() for f, n in fs if n > 60]
    assert not big and not long, big + long


# -- one way to start relay code -------------------------------------------------------------------
SCRIPTS = sorted((ROOT / "scripts").glob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py"))
SPAWNING = {
    ("subprocess", None),
    ("os", "fork"),
    ("os", "forkpty"),
    ("os", "system"),
    ("os", "popen"),
    ("os", "posix_spawn"),
    ("os", "posix_spawnp"),
    ("pty", "spawn"),
    ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
} | {
    ("os", n)
    for n in (
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "execl",
        "execle",
        "execlp",
        "execlpe",
        "spawnv",
        "spawnve",
        "spawnvp",
        "spawnl",
    )
}
# Who may call relaychaos.stack.processes.spawn, and what for: relay code only through sandbox.launch.
SPAWN_CALLERS = {
    "relaychaos.stack.launch": "every relay command, in its sandbox",
    "relaychaos.stack.account_system": "the account-system fixture",
    "relaychaos.stack.toxiproxy_server": "the Toxiproxy server",
    "relaychaos.stack.postgres": "the PostgreSQL server of a relay's ledger",
    "benchmarks/account_system.py": "a bare aiohttp server, the benchmark's baseline",
}


@functools.cache
def _calls(path: Path) -> tuple[tuple[str, str], ...]:
    """(base name, attribute) of every call of the form base.attr(...) or name(...) (base '') in a file."""
    out = []
    for node in _nodes(path):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute):
                out.append((f.value.id if isinstance(f.value, ast.Name) else "?", f.attr))
            elif isinstance(f, ast.Name):
                out.append(("", f.id))
    return tuple(out)


def _starts_processes(path: Path) -> list[str]:
    return sorted(
        {f"{b}.{a}" for b, a in _calls(path) if (b, a) in SPAWNING or (b, None) in SPAWNING}
        | {a for b, a in _calls(path) if a == "spawn" and b in ("", "processes")}
    )


def _reads_commands(path: Path) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "commands" for n in _nodes(path))


FILES = {**{mod: path for mod, path in MODULES.items()}, **{str(p.relative_to(ROOT)): p for p in SCRIPTS}}


@pytest.mark.parametrize(
    "name",
    sorted(
        n
        for n, p in FILES.items()
        if _reads_commands(p) and n not in ("relaychaos.stack.manifest", "relaychaos.stack.launch")
    ),
)
def test_who_reads_a_relay_s_commands_starts_no_process_but_through_the_sandbox(name):
    """A module that reads a manifest's commands may record or change them, never run them itself: relay code
    starts in relaychaos.stack.launch alone, with the whole sandbox around it."""
    assert _starts_processes(FILES[name]) == [], f"{name} reads relay commands and starts processes"


def test_only_the_named_starters_call_spawn():
    callers = sorted(
        n
        for n, p in FILES.items()
        if "spawn" in [a for b, a in _calls(p) if b in ("", "processes")] and n != "relaychaos.stack.processes"
    )
    assert callers == sorted(SPAWN_CALLERS), f"spawn() callers: {callers}"


def test_the_exec_wrapper_command_line_is_built_in_one_place():
    builders = sorted(n for n, p in FILES.items() if any(a == "wrap" for _, a in _calls(p)))
    assert builders == ["relaychaos.stack.processes"], builders
