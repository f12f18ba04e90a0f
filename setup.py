"""Packaging's one dynamic part: every folder under the mapped design folders is a `relaychaos.*` package.

The metadata and the mapping (`[tool.setuptools.package-dir]`: harness/ is `relaychaos`,
fixtures/ is `relaychaos.fixtures`, ...) are in pyproject.toml. Folders holding only data (a
mutant's relay.toml, the regression files, the stdlib and Go relays) are listed too, so that
they ship.
"""

import tomllib
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
MAPPED: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
# bytecode; the Go and Rust relays' builds; a Node service's packages; a Python service's own venv
SKIP = {"__pycache__", "bin", "node_modules", "venv"}


def packages() -> list[str]:
    found = []
    for name, folder in MAPPED.items():
        base = ROOT / folder
        for d in [base, *sorted(p for p in base.rglob("*") if p.is_dir())]:
            rel = d.relative_to(base).parts
            if SKIP & set(rel) or any(part.startswith(".") for part in rel):
                continue
            if d.is_symlink():
                continue  # harness/fixtures -> ../fixtures, ...: a mapped folder, listed from its own entry
            found.append(".".join((name, *rel)))
    return found


setup(packages=packages())
