"""Type-check the `relaychaos` package as Python imports it, and name each finding by its real file.

    .venv/bin/python scripts/typecheck.py [MYPY_ARGS...]        (make lint runs it)

mypy checks the package itself: `[tool.mypy]` in pyproject.toml puts src/ on its path, where
src/relaychaos links to harness/ and harness/fixtures, harness/reports, ... link to the mapped folders
(pyproject.toml, `[tool.setuptools.package-dir]`). This script only writes each reported path back as
the repository's own file (src/relaychaos/checkers/money.py -> harness/checkers/money.py,
src/relaychaos/reports/html.py -> reports/html.py). Exit status: mypy's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH = re.compile(r"^(src/relaychaos/[^:]*)(:.*)$", re.S)


def real(line: str) -> str:
    """`line` with its leading src/relaychaos/... path replaced by the real file's path in the checkout."""
    found = PATH.match(line)
    if not found:
        return line
    return os.path.relpath(os.path.realpath(ROOT / found[1]), ROOT) + found[2]


def main() -> int:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *sys.argv[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    for line in (done.stdout + done.stderr).splitlines():
        print(real(line))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
