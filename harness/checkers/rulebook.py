"""The rule book: every rule the harness judges by, with the contract sentences it enforces.

    @rule("one-account-call", "at most one account call per GUID", contract=("3.claim-new", ...))
    def one_account_call(facts: Facts) -> list[Verdict]: ...

A rule's `contract` names clauses of relaychaos.contract (checked when the rule is
registered, so a citation cannot point at nothing). Rules are listed in the
order their modules register them: money first, then the ledger, the answers,
the interface.

A rule's `needs` names what it reads of the relay beyond the money (CAPABILITIES): a relay that does not
offer one (a keyed service whose [ledger] maps no `attempts` column, say, or one without a `purge`
command) leaves the rule "not checked", with what to map or add, never "held". A rule's `partly` names
what only a part of it reads: without it the rest is judged (ledger-agrees judges a row's stored answer
only where the ledger shows one).
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
    partly: tuple[str, ...] = ()  # what a part of it reads (CAPABILITIES): without it, that part is not judged

    @property
    def clauses(self) -> list[Clause]:
        return [clause(c) for c in self.contract]

    @property
    def sections(self) -> str:
        """`§3, §5`: the contract sections this rule enforces, for tables."""
        return ", ".join(f"§{s}" for s in sorted({c.section for c in self.clauses}))


RULES: dict[str, Rule] = {}


@dataclass(frozen=True)
class Capability:
    """Something a rule may read of the relay beyond its money: what it is (`reads`, after "the rule reads") and,
    for a relay that does not offer it, what to map or add (`missing`, after "not checked:")."""

    reads: str
    missing: str


# What a rule may need of the relay beyond its money (the account system's record and the channel's calls),
# and why a relay that lacks it leaves the rule not checked (never held). relaychaos.stack.api_profile's
# Profile.provides says which a relay offers: a course relay with its three batch commands offers them all.
CAPABILITIES: dict[str, Capability] = {
    "answers": Capability(
        "the relay's answers as definite, refused, in flight or unknown", "the relay's answers cannot be read"
    ),
    "contract-codes": Capability(
        "the contract's answer codes (E400, E901 to E904)",
        "only a course relay answers with the contract's codes (E400, E901 to E904)",
    ),
    "ledger-status": Capability(
        "the status of a key's ledger row",
        'there is no ledger to read (ledger = "none"): map the table the service keeps its keys in '
        '([ledger] kind = "postgresql", table, key, status, statuses)',
    ),
    "ledger-times": Capability(
        "a ledger row's last change",
        "map `updated_at` in [ledger] (the column of a row's last change: epoch seconds or a timestamp)",
    ),
    "ledger-attempts": Capability(
        "a ledger row's attempts", "map `attempts` in [ledger] (the column counting the calls made for a key)"
    ),
    "ledger-answer": Capability(
        "the answer a ledger row keeps",
        "map `answer` in [ledger] (the column of the HTTP status the service saved for a key and replays)",
    ),
    "batch-command": Capability(
        "the runs of the relay's batch commands",
        "there is no batch command ([commands] resolve, reprocess or purge = [...] in relay.toml)",
    ),
    **{
        command: Capability(
            f"what `{command}` does", f"there is no `{command}` command ([commands] {command} = [...] in relay.toml)"
        )
        for command in ("resolve", "reprocess", "purge")
    },
}
# The names older histories record in their header's `provides`, and what each offered in today's names.
RENAMED = {
    "ledger-rows": ("ledger-times", "ledger-attempts", "ledger-answer"),
    "batch": ("batch-command", "resolve", "reprocess", "purge"),
}


def rule(
    rule_id: str,
    text: str,
    *,
    contract: tuple[str, ...],
    needs: tuple[str, ...] = (),
    partly: tuple[str, ...] = (),
) -> Callable[[Checker], Checker]:
    """Register the decorated checker as rule `rule_id`; every clause id must exist in the contract, and every
    need (and what a part of it reads) in CAPABILITIES."""
    if not contract:
        raise ValueError(f"rule {rule_id!r} cites no contract clause; every rule follows from a sentence of it")
    for c in contract:
        clause(c)
    unknown = [n for n in needs + partly if n not in CAPABILITIES]
    if unknown:
        raise ValueError(f"rule {rule_id!r} needs {unknown}, which are not capabilities ({', '.join(CAPABILITIES)})")

    def register(check: Checker) -> Checker:
        if rule_id in RULES:
            raise ValueError(
                f"rule {rule_id!r} is registered twice ({RULES[rule_id].check.__name__}, {check.__name__})"
            )
        RULES[rule_id] = Rule(rule_id, text, tuple(contract), check, tuple(needs), tuple(partly))
        return check

    return register
