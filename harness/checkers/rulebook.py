"""The rule book: every rule the harness judges by, with the contract sentences it enforces.

    @rule("one-account-call", "at most one account call per GUID", contract=("3.claim-new", ...))
    def one_account_call(facts: Facts) -> list[Verdict]: ...

A rule's `contract` names clauses of relaychaos.contract (checked when the rule is
registered, so a citation cannot point at nothing). Rules are listed in the
order their modules register them: money first, then the ledger, the answers,
the interface.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from relaychaos.contract import Clause, clause

if TYPE_CHECKING:
    from relaychaos.checkers.facts import Facts
    from relaychaos.checkers.verdict import Verdict


@dataclass(frozen=True)
class Rule:
    """One rule: its id, one line saying what must hold, the clauses it enforces, and its checker."""

    id: str
    text: str
    contract: tuple[str, ...]
    check: Callable[[Facts], list[Verdict]]

    @property
    def clauses(self) -> list[Clause]:
        return [clause(c) for c in self.contract]

    @property
    def sections(self) -> str:
        """`§3, §5`: the contract sections this rule enforces, for tables."""
        return ", ".join(f"§{s}" for s in sorted({c.section for c in self.clauses}))


RULES: dict[str, Rule] = {}


def rule(rule_id: str, text: str, *, contract: tuple[str, ...]):
    """Register the decorated checker as rule `rule_id`; every clause id must exist in the contract."""
    if not contract:
        raise ValueError(f"rule {rule_id!r} cites no contract clause; every rule follows from a sentence of it")
    for c in contract:
        clause(c)

    def register(check: Callable[[Facts], list[Verdict]]):
        if rule_id in RULES:
            raise ValueError(
                f"rule {rule_id!r} is registered twice ({RULES[rule_id].check.__name__}, {check.__name__})"
            )
        RULES[rule_id] = Rule(rule_id, text, tuple(contract), check)
        return check

    return register
