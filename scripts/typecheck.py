"""Type-check the `relaychaos` package as Python imports it: mypy over a link tree of the mapped folders.

    .venv/bin/python scripts/typecheck.py [MYPY_ARGS...]        (make lint runs it)

The repository keeps the design's top-level folders (harness/, reports/, fixtures/, ...) and
maps them under one import name in pyproject.toml's `[tool.setuptools.package-dir]`. A type
checker cannot follow that mapping, so this script makes it visible: build/typecheck/relaychaos/
holds a link to each entry of harness/ and one to each mapped subpackage's folder; mypy checks
`-p relaychaos` there with the settings of `[tool.mypy]`, and every path it reports is written
back as the repository's own (build/typecheck/relaychaos/checkers/money.py -> harness/checkers/money.py).
The tree is rebuilt on every run, so new and removed modules are seen. Exit status: mypy's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"


def mapping() -> dict[str, str]:
    """Import name -> folder, as pyproject.toml states it."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]


def link_tree() -> dict[str, str]:
    """Build TREE from the mapping; the tree's path prefixes -> the repository's (longest first)."""
    shutil.rmtree(TREE, ignore_errors=True)
    back = {}
    for name, folder in sorted(mapping().items(), key=lambda kv: kv[0].count(".")):
        place = TREE.joinpath(*name.split("."))
        if name.count(".") == 0:
            place.mkdir(parents=True)
            for entry in sorted((ROOT / folder).iterdir()):
                if entry.name != "__pycache__":
                    (place / entry.name).symlink_to(entry)
        else:
            if place.is_symlink():
                place.unlink()  # a folder of the same name in the top package: the mapping wins
            place.symlink_to(ROOT / folder, target_is_directory=True)
        back[str(place.relative_to(ROOT)) + "/"] = folder.rstrip("/") + "/"
    return dict(sorted(back.items(), key=lambda kv: -len(kv[0])))


def main() -> int:
    back = link_tree()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "-p",
            "relaychaos",
            *sys.argv[1:],
        ],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(TREE)},
        capture_output=True,
        text=True,
    )
    for line in (done.stdout + done.stderr).splitlines():
        for tree, repo in back.items():
            if line.startswith(tree):
                line = repo + line[len(tree) :]
                break
        print(line)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
