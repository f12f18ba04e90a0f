"""The checkers: small pure functions of a history, each returning the verdicts of one rule.

`check(history)` runs them all; `RULES` is the rule book (rule id → Rule: its
line, the contract clauses it enforces, its checker), in the order reports list
them (money first); see rulebook.py. Shaped after Jepsen's checker.clj:
compose independent checks over one recorded history.
"""
from __future__ import annotations

from ..history import History
from ..verdict import Verdict
from . import money, ledger_rules, answers, interface  # noqa: F401 - registration order is report order
from .facts import Facts
from .rulebook import RULES, Rule

__all__ = ["RULES", "Rule", "check", "notes", "report"]


def check(history: History) -> list[Verdict]:
    """Every verdict of every checker on this history, ordered by the rule book."""
    facts = Facts(history)
    verdicts = [v for r in RULES.values() for v in r.check(facts)]
    order = list(RULES)
    return sorted(verdicts, key=lambda v: order.index(v.rule) if v.rule in order else len(order))


def notes(history: History) -> list[str]:
    """What the run noticed about the relay that is not a verdict (e.g. an overflowing accept queue)."""
    return answers.accept_notes(Facts(history))


def report(history: History, verdicts: list[Verdict], limit: int = 5) -> str:
    """The verdicts as incident reports, the most serious first."""
    from ..verdict import render

    facts = Facts(history)
    name = facts.scenario.get("name", "?")
    if not verdicts:
        return f"scenario {name}: every rule held"
    head = [f"scenario {name} against relay '{facts.scenario.get('relay', '?')}': {len(verdicts)} violation(s) "
            f"of {len({v.rule for v in verdicts})} rule(s)"]
    if facts.scenario.get("description"):
        head.append(f"  scenario: {facts.scenario['description']}")
    shown = [render(v, history, facts.account_calls, facts.start, facts.labels) for v in verdicts[:limit]]
    more = [f"... and {len(verdicts) - limit} more"] if len(verdicts) > limit else []
    return "\n\n".join(["\n".join(head)] + shown + more)
