"""The checkers: small pure functions of a history, each returning the verdicts of one rule.

`check(history)` runs them all; `RULES` is the rule book (rule → one line), in
the order reports list them (money first). Shaped after Jepsen's checker.clj:
compose independent checks over one recorded history.
"""
from __future__ import annotations

from typing import Callable

from ..history import History
from ..verdict import Verdict
from . import answers, ledger_rules, money
from .facts import Facts

RULES: dict[str, str] = {
    "one-account-call": "at most one account call per GUID",
    "one-debit": "at most one applied debit per GUID",
    "guid-preserved": "every account call carries a GUID the channel sent, with the channel's request",
    "one-debit-per-payment": "a payment the client meant once is debited once, whatever GUIDs it carried",
    "exactly-once": "what the channel was told definitely matches what the account system did",
    "balances": "balances are conserved and equal what the applied GUIDs imply",
    "write-before-send": "a committed SENT row exists whenever the account system receives a transfer",
    "converged": "after the final heal, resolve and reprocess, no row is left SENT or UNKNOWN",
    "ledger-agrees": "the ledger's status and code agree with what the account system did",
    "transitions": "ledger statuses move only along the contract's transitions",
    "resolve-min-age": "resolve leaves rows younger than --min-age alone",
    "purge-retention": "purge deletes only DONE rows at least --retention old",
    "attempt-cap": "reprocess stops at --max-attempts",
    "done-replay": "resends of a DONE GUID get its first answer, byte for byte",
    "e903-at-once": "a duplicate of a GUID being sent gets E903 at once, without waiting",
    "answer-codes": "the relay's answer codes follow the contract's table",
    "answered-in-time": "the relay answers within ACCOUNT_TIMEOUT_MS + 1 s",
    "interface": "answers are JSON objects with guid and a known code, with the right HTTP status",
    "ledger-schema": "the ledger has the contract's table and columns, and can be read",
    "batch-runs": "resolve, reprocess and purge run through and exit 0",
    "serve-ready": "serve starts and answers GET /health",
}

CHECKERS: list[Callable[[Facts], list[Verdict]]] = [
    money.one_account_call, money.one_debit, money.guid_preserved, money.one_debit_per_payment, money.exactly_once, money.balances,
    ledger_rules.write_before_send, ledger_rules.converged, ledger_rules.ledger_agrees, ledger_rules.transitions,
    ledger_rules.resolve_min_age, ledger_rules.purge_retention, ledger_rules.attempt_cap,
    answers.done_replay, answers.e903_at_once, answers.answer_codes, answers.answered_in_time, answers.interface,
    ledger_rules.ledger_schema, answers.batch_runs, answers.serve_ready,
]


def check(history: History) -> list[Verdict]:
    """Every verdict of every checker on this history, ordered by the rule book."""
    facts = Facts(history)
    verdicts = [v for checker in CHECKERS for v in checker(facts)]
    order = list(RULES)
    return sorted(verdicts, key=lambda v: order.index(v.rule) if v.rule in order else len(order))


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
