"""Literal histories the report tests draw: a relay that debits twice, and one that does everything right."""

from __future__ import annotations

from .history_builder import HistoryBuilder


def double_debit() -> HistoryBuilder:
    """A relay that sent g1 twice after a dropped answer, with a fault on each side, a kill and a batch run."""
    h = HistoryBuilder(account_timeout_ms=200, accounts={"alice": 100, "bob": 0}, name="double-debit")
    h.start("a", at=0.0)
    name = h.toxic("account", "timeout", at=0.1, attributes={"timeout": 0})
    h.send("g1", at=0.2, answered_at=0.45, code="E901")
    h.account_call("g1", received_at=0.21)  # debited; its answer is lost on the way back
    h.remove_toxic("account", name, at=0.5)
    h.send("g1", at=0.6, answered_at=0.65)
    h.account_call("g1", received_at=0.61)
    h.disable("hub-a", at=0.7)
    h.send("g2", at=0.72, answered_at=None, gave_up_at=0.9, error="connection reset")
    h.account_call("g2", received_at=0.8, answered_at=None, code=None)  # never answered
    h.heal(at=1.0)
    h.kill("a", at=1.1)
    h.start("a", at=1.2)
    h.batch("resolve", 0.5, start=1.3, end=1.4, returncode=1)
    return h


def happy() -> HistoryBuilder:
    """One transfer, sent once, debited once, answered 0000."""
    h = HistoryBuilder(accounts={"alice": 100, "bob": 0}, name="happy")
    h.start("a", at=0.0)
    h.send("g1", at=0.1, answered_at=0.15)
    h.account_call("g1", received_at=0.11)
    h.snapshot(
        {
            "g1": {
                "status": "DONE",
                "resp_code": "0000",
                "request": "{}",
                "response": "",
                "attempts": 1,
                "updated_at": 0.15,
            }
        },
        at=0.2,
    )
    return h
