"""The indexed checkers judge 200 random literal histories exactly as the checkers before them did.

tests/random_histories.py draws each history from its seed; tests/data/random_verdicts.json.gz
holds the verdicts and notes the scan-per-question checkers (commit 8b64b2a) gave them: 3,504
verdicts of 18 rules, on histories full of simultaneous events, overlapping faults and batches.
The same verdicts, listed in the rule book's order and, within a rule, by GUID label.
The pins are in today's words: what a race decides (how many calls, debits, balances) is in a
verdict's details, not its summary, and write-before-send is one verdict per GUID naming every early call.
"""

import gzip
import json
from pathlib import Path

import pytest

from relaychaos import checkers
from relaychaos.checkers.facts import Facts

from .random_histories import random_history
from .verdict_order import assert_same_verdicts

with gzip.open(Path(__file__).parent / "data" / "random_verdicts.json.gz") as _f:
    BEFORE = json.loads(_f.read())


@pytest.mark.parametrize("seed", range(0, 200, 20))
def test_random_histories_get_the_verdicts_and_notes_they_got_before(seed):
    for s in range(seed, seed + 20):
        history = random_history(s)
        assert_same_verdicts(checkers.check(history), BEFORE[f"{s:03d}"]["verdicts"], Facts(history), f"seed {s}")
        assert checkers.notes(history) == BEFORE[f"{s:03d}"]["notes"], f"seed {s}"
