"""The coverage grid: which faults met a transfer whose ledger row was in which state, as a history shows.

    cells(history)   # {("kill", "SENT"), ("duplicate in flight", "SENT"), ("purge running", "UNKNOWN"), ...}

Rows are the row's states (RECEIVED, SENT, DONE, UNKNOWN, FAILED, or no row yet); columns the faults:
a kill, a dropped answer, a dropped request, a refused connection, a duplicate in flight, and resolve,
reprocess or purge running. A fault meets a transfer when a channel call of its GUID was in flight,
or the account system received a call of it, while the fault was in force (a batch run meets every
row of the run); the row's state is the one the last ledger snapshot before the fault showed. A run's
grid marks each cell with the scenarios that reached it (relaychaos.reports.results), so what nothing
reached is plain to see.
"""

from __future__ import annotations

from collections.abc import Iterable

from relaychaos.checkers.claim_judges import fault_end
from relaychaos.checkers.facts import Facts
from relaychaos.events import BATCH_COMMANDS, Event, Op

STATES = ("no row", "RECEIVED", "SENT", "DONE", "UNKNOWN", "FAILED")
FAULTS = (
    "kill",
    "dropped answer",
    "dropped request",
    "refused connection",
    "duplicate in flight",
    "resolve running",
    "reprocess running",
    "purge running",
)
CUTTING = ("timeout", "limit_data", "reset_peer", "slicer")  # toxics that lose or cut what passes


def cells(history: Iterable[Event] | Facts) -> set[tuple[str, str]]:
    """Every (fault, row state) cell the history reached (see the module doc)."""
    facts = history if isinstance(history, Facts) else Facts(history)
    events = facts.events
    out: set[tuple[str, str]] = set()
    for e in events:
        fault = _fault(e)
        if fault is None:
            continue
        end = fault_end(events, e)
        t0, t1 = e.time, (end.time if end is not None else float("inf"))
        rows = _rows_before(facts, e.index)
        if fault.endswith("running"):
            out |= {(fault, _state(row)) for row in rows.values()}
            continue
        for guid in _met(facts, t0, t1):
            out.add((fault, _state(rows.get(guid))))
    for guid in facts.channel_guids:
        calls = facts.calls_for(guid)
        for c in facts.channel_for(guid):
            t = c.sent_at or c.invoked_at
            if any(x["received_at"] <= t <= (x.get("answered_at") or float("inf")) for x in calls):
                out.add(("duplicate in flight", _state(_rows_before(facts, c.index).get(guid))))
    return out


def _fault(e: Event) -> str | None:
    v = e.value
    if e.f == Op.KILL and e.type == "invoke":
        return "kill"
    if e.f == Op.DISABLE_PROXY:
        return "refused connection"
    if e.f == Op.ADD_TOXIC and e.type == "invoke" and v.get("kind") in CUTTING:
        return "dropped request" if v.get("stream") == "upstream" else "dropped answer"
    if e.f in BATCH_COMMANDS and e.type == "invoke" and "run" in v:
        return f"{e.f} running"
    return None


def _met(facts: Facts, t0: float, t1: float) -> set[str]:
    """The GUIDs with a channel call in flight, or an account call received, from t0 to t1."""
    met = {c.guid for c in facts.channel if c.guid and c.invoked_at <= t1 and (c.completed_at or float("inf")) >= t0}
    met |= {c["guid"] for c in facts.account_calls if c.get("guid") and t0 <= c["received_at"] <= t1}
    return {g for g in met if g in facts.channel_guids}


def _rows_before(facts: Facts, index: int) -> dict:
    before, _ = facts.snapshots_around(index, index)
    return before.value["rows"] if before is not None else {}


def _state(row: dict | None) -> str:
    status = (row or {}).get("status")
    return status if status in STATES else "no row"
