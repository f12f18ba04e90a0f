"""The indexed checkers judge real recorded histories exactly as the checkers before them did.

tests/data/recorded/ holds 72 histories recorded on this project's machine (every named
scenario against the reference relay, mutants caught in their scenarios, replays), and
verdicts.json the verdicts and notes the checkers gave them before they were made linear
(commit 8b64b2a, the scan-per-question checkers). Any difference is a change of verdict;
the order is the rule book's, then by GUID label (tests/verdict_order.py).
The pins are in today's words: what a race decides (how many calls, debits, balances) is in a
verdict's details, not its summary, and write-before-send is one verdict per GUID naming every early call.
"""

import json
from pathlib import Path

import pytest

from relaychaos import checkers
from relaychaos.checkers.facts import Facts
from relaychaos.history import History, HistoryFile, iter_events

from .verdict_order import assert_same_verdicts

DATA = Path(__file__).parent / "data" / "recorded"
BEFORE = json.loads((DATA / "verdicts.json").read_text())


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_a_recorded_history_gets_the_verdicts_and_notes_it_got_before(name):
    found = checkers.check(HistoryFile(DATA / name))
    assert_same_verdicts(found, BEFORE[name]["verdicts"], Facts(HistoryFile(DATA / name)), name)
    assert checkers.notes(History(list(iter_events(DATA / name)))) == BEFORE[name]["notes"]


def test_the_recorded_histories_cover_every_kind_of_verdict_the_scenarios_raise():
    rules = {v["rule"] for h in BEFORE.values() for v in h["verdicts"]}
    assert len(BEFORE) == 72 and len(rules) >= 15
