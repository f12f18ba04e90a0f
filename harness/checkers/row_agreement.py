"""How a ledger row's final status disagrees with the account system's record of its GUID: the judgement of
the `ledger-agrees` rule (relaychaos.checkers.ledger_rules), for the course's table and a keyed service's own.

Each function returns (what is wrong, or None when the row agrees; the contract clause it breaks).
"""

from __future__ import annotations

from relaychaos import idempotency_key
from relaychaos.checkers.facts import Facts
from relaychaos.events import REFUSED


def course_disagreement(facts: Facts, guid: str, row: dict) -> tuple[str | None, str]:
    """How a course relay's row disagrees with the account system (None: it agrees), and the clause it breaks."""
    calls = facts.calls_for(guid)
    debits = sum(1 for c in calls if c.get("applied"))
    first = calls[0].get("code") if calls else None
    status, code = row.get("status"), row.get("resp_code")
    if status == "DONE" and first is None:
        return f"the ledger says DONE with {code}, but the account system never processed this GUID", "3.definite"
    if status == "DONE" and code != first:
        return f"the ledger says DONE with {code}, but the account system answered {first}", "3.definite"
    if status == "FAILED" and calls:
        return (
            f"the ledger says FAILED (definitely not sent), but the account system received it "
            f"{len(calls)} time(s) and debited it {debits} time(s)",
            "5.resolve-404",
        )
    return None, "3.definite"


def keyed_disagreement(facts: Facts, guid: str, row: dict) -> tuple[str | None, str]:
    """How a keyed service's row disagrees with its PSP (None: it agrees): DONE for a key the PSP executed or
    refused, with a saved answer of that kind where [ledger] maps `answer`; FAILED for one it never executed (a
    key the PSP received and did not execute is FAILED once its query says so)."""
    lives = facts.lives(guid)
    calls = lives[-1] if lives else []  # the row's own life: a purge forgets the key
    debits = sum(1 for c in calls if c.get("applied"))
    refusal = next((c.get("code") for c in calls if str(c.get("code", "")).startswith("B")), None)
    did, word = None, None  # what the PSP did, and the contract's word for the answer that says so
    if debits:
        did, word = "executed it", "0000"
    elif refusal:
        did, word = f"refused it ({refusal})", REFUSED
    status, answer = row.get("status"), row.get("answer")
    if status == "DONE" and did is None:
        return "the ledger says DONE, but the account system never executed or refused this GUID", "3.definite"
    if status == "DONE" and isinstance(answer, int) and idempotency_key.code(answer) != word:
        return (
            f"the ledger says DONE with a saved answer of HTTP {answer}, but the account system {did}",
            "3.refused" if word == REFUSED else "3.definite",
        )
    if status == "FAILED" and debits:
        return (
            f"the ledger says FAILED (definitely not executed), but the account system debited it {debits} time(s)",
            "5.resolve-404",
        )
    return None, "3.definite"
