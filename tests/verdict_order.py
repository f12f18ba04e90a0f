"""What "the same verdicts as before" means: the same verdicts, listed by rule, then by GUID label.

The pinned verdict files were written when verdicts of one rule came in the order the
checker found them; now they come in the rule book's order and then by GUID label, so a
regrade lists them alike. The comparison is of the verdicts, and of their order apart.
"""

import json

from relaychaos import checkers
from relaychaos.checkers.facts import Facts


def canonical(verdict: dict) -> str:
    return json.dumps(verdict, sort_keys=True)


def assert_same_verdicts(found: list, before: list[dict], facts: Facts, where: str) -> None:
    """`found` (Verdicts) are `before` (dicts), in the rule book's order and then by GUID label."""
    now = json.loads(json.dumps([v.to_dict() for v in found]))
    assert sorted(map(canonical, now)) == sorted(map(canonical, before)), where
    rules = list(checkers.RULES)
    keys = [(rules.index(v.rule), facts.guid_order(v.guid)) for v in found]
    assert keys == sorted(keys), f"{where}: verdicts out of order"
