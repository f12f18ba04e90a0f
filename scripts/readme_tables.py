"""Print the README's rules table and contract-coverage table, generated from the rule book and the scenarios.

    .venv/bin/python scripts/readme_tables.py

tests/test_citations.py fails until the README holds exactly these tables.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import contract  # noqa: E402
from relaychaos.checkers import RULES  # noqa: E402
from relaychaos.scenarios import ALL  # noqa: E402

print(contract.rules_table(RULES), "", contract.coverage_table(ALL.values(), RULES), sep="\n")
