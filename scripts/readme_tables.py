"""Print the docs' generated tables: the rules, the contract's coverage, the kill matrix.

    .venv/bin/python scripts/readme_tables.py

The rules, coverage and landing-claims tables belong in docs/rules.md, the kill matrix in docs/relays.md;
tests/test_citations.py, tests/test_landing.py and tests/test_kill_matrix.py fail until those pages hold
exactly these.
"""

from relaychaos import contract
from relaychaos.checkers import RULES
from relaychaos.relay_under_test.mutants.table import readme_table
from relaychaos.scenarios import ALL, claims_table

print(
    contract.rules_table(RULES),
    contract.coverage_table(ALL.values(), RULES),
    claims_table(),
    readme_table(),
    sep="\n\n",
)
