"""The indexed checkers judge 200 random literal histories exactly as the checkers before them did.

tests/random_histories.py draws each history from its seed; tests/data/random_verdicts.json.gz
holds the verdicts and notes the scan-per-question checkers (commit 8b64b2a) gave them: 3,504
verdicts of 18 rules, on histories full of simultaneous events, overlapping faults and batches.
The same verdicts, listed in the rule book's order and, within a rule, by GUID label.
"""
import gzip
import json
from pathlib import Path

import pytest

from relaychaos import checkers
from relaychaos.checkers.facts import Facts

from .random_histories import random_history

BEFORE = json.loads(gzip.open(Path(__file__).parent / "data" / "random_verdicts.json.gz").read())


@pytest.mark.parametrize("seed", range(0, 200, 20))
def test_random_histories_get_the_verdicts_and_notes_they_got_before(seed):
    for s in range(seed, seed + 20):
        history = random_history(s)
        found = checkers.check(history)
        verdicts = json.loads(json.dumps([v.to_dict() for v in found]))
        assert sorted(map(canonical, verdicts)) == sorted(map(canonical, BEFORE[f"{s:03d}"]["verdicts"])), f"seed {s}"
        facts = Facts(history)
        assert [order(v, facts) for v in found] == sorted(order(v, facts) for v in found), f"seed {s}"
        assert checkers.notes(history) == BEFORE[f"{s:03d}"]["notes"], f"seed {s}"


def canonical(verdict: dict) -> str:
    return json.dumps(verdict, sort_keys=True)


def order(verdict, facts: Facts) -> tuple:
    return list(checkers.RULES).index(verdict.rule), facts.guid_order(verdict.guid)
