"""The docs' generated tables: the rules, the contract's coverage, the landing claims, the kill matrix.

    .venv/bin/python scripts/readme_tables.py           print them
    .venv/bin/python scripts/readme_tables.py --write   put them in their pages, in place of the tables there

The rules, coverage and landing-claims tables belong in docs/rules.md, the kill matrix in docs/relays.md;
tests/test_citations.py, tests/test_landing.py and tests/test_kill_matrix.py fail until those pages hold
exactly these. --write finds each table in its page by its header row and replaces its rows.
"""

import sys
from pathlib import Path

from relaychaos import contract
from relaychaos.checkers import RULES
from relaychaos.relay_under_test.mutants.table import readme_table
from relaychaos.scenarios import ALL, claims_table

DOCS = Path(__file__).resolve().parent.parent / "docs"


def tables() -> list[tuple[str, str]]:
    """(page, table) of every generated table."""
    return [
        ("rules.md", contract.rules_table(RULES)),
        ("rules.md", contract.coverage_table(ALL.values(), RULES)),
        ("rules.md", claims_table()),
        ("relays.md", readme_table()),
    ]


def splice(text: str, table: str, page: str) -> str:
    """`text` with the table whose header row is `table`'s replaced by `table`; SystemExit naming the page when
    it has no such table."""
    lines, header = text.split("\n"), table.split("\n")[0]
    if header not in lines:
        raise SystemExit(f"docs/{page} has no table headed {header!r}; fix: paste the table printed without --write")
    start = lines.index(header)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[:start] + table.split("\n") + lines[end:])


def main() -> None:
    if "--write" not in sys.argv[1:]:
        print(*(t for _, t in tables()), sep="\n\n")
        return
    for page, table in tables():
        path = DOCS / page
        path.write_text(splice(path.read_text(), table, page))
        print(f"wrote the table headed {table.split(chr(10))[0]!r} into docs/{page}")


if __name__ == "__main__":
    main()
