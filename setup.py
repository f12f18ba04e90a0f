"""Packaging's one dynamic part: every folder under the mapped design folders is a `relaychaos.*` package.

The metadata and the mapping (`[tool.setuptools.package-dir]`: harness/ is `relaychaos`,
fixtures/ is `relaychaos.fixtures`, ...) are in pyproject.toml. Folders holding only data (the
regression files, the reference's PostgreSQL manifest) are listed too, so that they ship. Of the
bundled relays the distribution ships the reference alone, unless RELAYCHAOS_WHEEL_RELAYS=all
(`RELAYCHAOS_WHEEL_RELAYS=all python -m build --wheel` in a checkout): see WHEEL_RELAYS.
"""

import os
import tomllib
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
MAPPED: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
# bytecode; the Go and Rust relays' builds; a Node service's packages; a Python service's own venv
SKIP = {"__pycache__", "bin", "node_modules", "venv"}
# The bundled relays a wheel ships: the reference, the default relay under test. The others (go, stdlib, java,
# rust, base, the mutants, the keyed services) are the project's examples and its tests' material: a checkout holds
# them, and a wheel built from one with RELAYCHAOS_WHEEL_RELAYS=all ships them too (an extra of pip's cannot add files
# to a wheel).
RELAYS = "relaychaos.relay_under_test"
WHEEL_RELAYS = {"reference"}


def shipped(package: str, every_relay: bool) -> bool:
    """Whether a package goes into the distribution: every one, but of the bundled relays only WHEEL_RELAYS unless
    every_relay."""
    if every_relay or not package.startswith(RELAYS + "."):
        return True
    return package.removeprefix(RELAYS + ".").split(".")[0] in WHEEL_RELAYS


def packages(every_relay: bool = False) -> list[str]:
    found = []
    for name, folder in MAPPED.items():
        base = ROOT / folder
        for d in [base, *sorted(p for p in base.rglob("*") if p.is_dir())]:
            rel = d.relative_to(base).parts
            if SKIP & set(rel) or any(part.startswith(".") for part in rel):
                continue
            if d.is_symlink():
                continue  # harness/fixtures -> ../fixtures, ...: a mapped folder, listed from its own entry
            package = ".".join((name, *rel))
            if shipped(package, every_relay):
                found.append(package)
    return found


if __name__ == "__main__":  # as setuptools runs it; tests import packages() alone
    setup(packages=packages(os.environ.get("RELAYCHAOS_WHEEL_RELAYS") == "all"))
