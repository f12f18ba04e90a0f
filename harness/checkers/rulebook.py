"""The rule book: every rule the harness judges by, with the contract sentences it enforces.

    @rule("one-account-call", "at most one account call per GUID", contract=("3.claim-new", ...))
    def one_account_call(facts: Facts) -> list[Verdict]: ...

A rule's `contract` names clauses of relaychaos.contract (checked when the rule is
registered, so a citation cannot point at nothing). Rules are listed in the
order their modules register them: money first, then the ledger, the answers,
the interface.

A rule's `needs` names what it reads of the relay beyond the money (CAPABILITIES): a relay that does not
offer one (a production API without the contract's ledger table, say) leaves the rule "not checked",
with the reason, never "held".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from relaychaos.contract import Clause, clause

if TYPE_CHECKING:
    from relaychaos.checkers.facts import Facts
    from relaychaos.checkers.verdict import Verdict

Checker = Callable[["Facts"], "list[Verdict]"]  # a rule's checker: the history's facts -> its verdicts


@dataclass(frozen=True)
class Rule:
    """One rule: its id, one line saying what must hold, the clauses it enforces, and its checker."""

    id: str
    text: str
    contract: tuple[str, ...]
    check: Checker
    needs: tuple[str, ...] = ()  # what of the relay it reads beyond the money (CAPABILITIES); none: every profile

    @property
    def clauses(self) -> list[Clause]:
        return [clause(c) for c in self.contract]

    @property
    def sections(self) -> str:
        """`§3, §5`: the contract sections this rule enforces, for tables."""
        return ", ".join(f"§{s}" for s in sorted({c.section for c in self.clauses}))


RULES: dict[str, Rule] = {}

# What a rule may need of the relay beyond its money (the account system's record and the channel's calls),
# and why a relay that lacks it leaves the rule not checked (never held). relaychaos.stack.api_profile's
# Profile.provides says which a relay offers: the course profile on SQLite offers them all.
CAPABILITIES = {
    "answers": "reads the relay's answers as definite, refused, in flight or unknown",
    "contract-codes": "reads the contract's answer codes (E901 to E904), which only the course profile answers with",
    "ledger-status": "reads the status of a key's ledger row at the moment the account system is called "
    "(there is no ledger to read)",
    "ledger-rows": "reads the contract's ledger table (status, code, attempts, times), which this relay's ledger "
    "does not keep",
    "batch": "runs resolve, reprocess or purge, which this relay does not have",
}


def rule(
    rule_id: str, text: str, *, contract: tuple[str, ...], needs: tuple[str, ...] = ()
) -> Callable[[Checker], Checker]:
    """Register the decorated checker as rule `rule_id`; every clause id must exist in the contract, and every
    need in CAPABILITIES."""
    if not contract:
        raise ValueError(f"rule {rule_id!r} cites no contract clause; every rule follows from a sentence of it")
    for c in contract:
        clause(c)
    unknown = [n for n in needs if n not in CAPABILITIES]
    if unknown:
        raise ValueError(f"rule {rule_id!r} needs {unknown}, which are not capabilities ({', '.join(CAPABILITIES)})")

    def register(check: Checker) -> Checker:
        if rule_id in RULES:
            raise ValueError(
                f"rule {rule_id!r} is registered twice ({RULES[rule_id].check.__name__}, {check.__name__})"
            )
        RULES[rule_id] = Rule(rule_id, text, tuple(contract), check, tuple(needs))
        return check

    return register
