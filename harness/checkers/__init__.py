"""The checkers: small pure functions of a history, each returning the verdicts of one rule.

`check(history)` runs them all; `RULES` is the rule book (rule id → Rule: its
line, the contract clauses it enforces, its checker), in the order reports list
them (money first); see rulebook.py. Shaped after Jepsen's checker.clj:
compose independent checks over one recorded history.
"""
from __future__ import annotations

from typing import Iterable

from relaychaos.events import Event
from relaychaos.checkers.verdict import Verdict
# The rule modules register their rules on import; their order here is the rule book's order.
from relaychaos.checkers import money, ledger_rules, answers, interface  # noqa: F401, I001
from relaychaos.checkers.facts import Facts, no_collection
from relaychaos.checkers.rulebook import RULES, Rule

__all__ = ["RULES", "Rule", "Verdict", "check", "notes"]


def check(history: Iterable[Event]) -> list[Verdict]:
    """Every verdict of every checker on this history, ordered by the rule book, then by GUID label.

    `history`: a History, a list of events, or a relaychaos.history.HistoryFile (a saved
    file, read in one pass and never held in memory whole).
    """
    with no_collection():
        facts = Facts(history)
        verdicts = [v for r in RULES.values() for v in r.check(facts)]
    order = {rule: n for n, rule in enumerate(RULES)}
    return sorted(verdicts, key=lambda v: (order.get(v.rule, len(order)), facts.guid_order(v.guid)))


def notes(history: Iterable[Event]) -> list[str]:
    """What the run noticed about the relay that is not a verdict (e.g. an overflowing accept queue)."""
    return answers.accept_notes(Facts(history))
