"""Whether each fault of a history met a transfer: for stories no landing claim was written for.

    faults_met(history)   # [FaultMet("add-toxic drop", met=True, index=12), ...]

The state machine's random stories inject faults at random; one that met no transfer tested nothing.
A fault meets a transfer when a channel call was in flight, or the account system received a call,
while it was in force (from its event to the one undoing it, or a heal; a kill at its instant).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from relaychaos.checkers.claim_judges import fault_end
from relaychaos.checkers.facts import Facts
from relaychaos.events import Event, Op


@dataclass(frozen=True)
class FaultMet:
    """One fault a history injected (a toxic, a proxy down, an account-system fault, a kill) and whether it met a
    transfer: a channel call in flight, or an account call received, while it was in force."""

    fault: str
    met: bool
    index: int


def faults_met(history: Iterable[Event] | Facts) -> list[FaultMet]:
    """Every fault of the history, in order, and whether it met a transfer (for stories no claim was written
    for: the state machine's random stories)."""
    facts = history if isinstance(history, Facts) else Facts(history)
    events = facts.events
    received = sorted(c["received_at"] for c in facts.account_calls)
    calls = [(c.invoked_at, c.completed_at if c.completed_at is not None else float("inf")) for c in facts.channel]
    out = []
    for e in events:
        if e.type != "invoke" and e.f in (Op.ADD_TOXIC, Op.KILL):
            continue
        if e.f not in (Op.ADD_TOXIC, Op.DISABLE_PROXY, Op.SERVER_FAULT, Op.KILL):
            continue
        end = fault_end(events, e)
        t0, t1 = e.time, (end.time if end is not None else float("inf"))
        met = any(a <= t1 and b >= t0 for a, b in calls) or any(t0 <= r <= t1 for r in received)
        what = e.value.get("toxic") or e.value.get("proxy") or e.value.get("slot") or ""
        out.append(FaultMet(f"{e.f} {what}".strip(), met, e.index))
    return out
