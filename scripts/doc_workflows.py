"""The GitHub workflows a documentation page shows: each ```yaml block of the page is one whole workflow.

    python scripts/doc_workflows.py docs/ci.md OUT    writes OUT/ci.md-1.yml, OUT/ci.md-2.yml, ..., prints their paths

scripts/package_check.sh lints them so with actionlint, beside .github/workflows/; tests/test_ci_doc.py reads them with
blocks() and runs their steps.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FENCE = re.compile(r"^```yaml\n(.*?)^```$", re.S | re.M)


def blocks(page: Path) -> list[str]:
    """The text of each ```yaml block of `page`, in order."""
    return FENCE.findall(page.read_text())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: doc_workflows.py PAGE OUT", file=sys.stderr)
        return 2
    page, out = Path(argv[0]), Path(argv[1])
    found = blocks(page)
    if not found:
        print(f"doc_workflows: {page} has no ```yaml block; fix: give the page of the workflows", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    for number, text in enumerate(found, 1):
        path = out / f"{page.name}-{number}.yml"
        path.write_text(text)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
