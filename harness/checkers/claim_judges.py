"""The judge of each landing claim kind: a pure function of the history (seen as a Run) and the claim.

Each returns (landed, what the history shows, the events that show it), or raises Unjudgeable when
the history lacks what the claim reads (relaychaos.checkers.landing makes that UNKNOWN).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relaychaos.checkers import claims as C
from relaychaos.checkers.facts import Facts
from relaychaos.events import BATCH_COMMANDS, Event, Op

UNDO = {Op.ADD_TOXIC: Op.REMOVE_TOXIC, Op.DISABLE_PROXY: Op.ENABLE_PROXY, Op.SERVER_FAULT: Op.RELEASE}


class Unjudgeable(Exception):
    """The history lacks what a claim reads: the claim is UNKNOWN, with this message."""


@dataclass(frozen=True)
class Step:
    """One numbered step as the history has it: its invoke and end events (end None: it never ended)."""

    n: int
    text: str
    start: Event
    end: Event | None

    def holds(self, e: Event) -> bool:
        return self.start.index < e.index and (self.end is None or e.index < self.end.index)


class Run:
    """The history seen as the claims read it: steps by number, GUIDs by label, events in order."""

    def __init__(self, facts: Facts):
        self.facts = facts
        self.events: list[Event] = facts.events
        self.steps: dict[int, Step] = {}
        for e in self.events:
            n = e.value.get("n")
            if e.f != Op.STEP or not isinstance(n, int):
                continue
            if e.type == "invoke":
                self.steps[n] = Step(n, e.value.get("step", ""), e, None)
            elif n in self.steps and self.steps[n].end is None:
                self.steps[n] = Step(n, self.steps[n].text, self.steps[n].start, e)
        self.guids: dict[str, str] = dict(facts.header.guids)

    def guid(self, label: str) -> str:
        if label not in self.guids:
            raise Unjudgeable(f"the history names no GUID for {label}")
        return self.guids[label]

    def step(self, n: int) -> Step:
        if n not in self.steps:
            raise Unjudgeable(f"step {n} never ran (the run stopped before it)")
        return self.steps[n]

    def fault_window(self, n: int) -> tuple[float, float, list[int]]:
        """(from, to, events) of the fault step n set: from its nemesis event to the one undoing it or a heal."""
        step = self.step(n)
        set_ = next((e for e in self.events if step.holds(e) and e.process == "nemesis"), None)
        if set_ is None or set_.f not in UNDO:
            raise Unjudgeable(f"step {n} set no fault")
        end = fault_end(self.events, set_)
        return set_.time, (end.time if end else float("inf")), [set_.index] + ([end.index] if end else [])

    def calls(self, label: str) -> list[dict]:
        if not self.facts.has_stats:
            raise Unjudgeable("the history has no record of the account system's calls")
        return sorted(self.facts.calls_for(self.guid(label)), key=lambda c: c["received_at"])

    def snapshot_before(self, index: int) -> Event:
        before, _ = self.facts.snapshots_around(index, index)
        if before is None:
            raise Unjudgeable("no ledger snapshot was read before that moment (the ledger could not be read)")
        return before

    def batch(self, n: int) -> Event:
        """The first batch run step n started."""
        step = self.step(n)
        started = [e for e in self.events if step.holds(e) and e.f in BATCH_COMMANDS and e.type == "invoke"]
        if not started:
            raise Unjudgeable(f"step {n} ran no batch command")
        return started[0]

    def batch_end(self, start: Event) -> Event | None:
        return fault_end(self.events, start)


def fault_end(events: list[Event], e: Event) -> Event | None:
    """The event that ends what `e` began (None: nothing did): a batch run's end; the undoing of a toxic, a
    proxy down or a held GUID (same proxy and toxic), or a heal; a kill ends at once (itself)."""
    if e.f == Op.KILL:
        return e
    for u in events[e.index + 1 :]:
        if e.f in BATCH_COMMANDS:
            if u.process == e.process and u.f == e.f:
                return u
        elif u.process == "nemesis" and (
            u.f == Op.HEAL
            or (
                u.f == UNDO.get(e.f)
                and all(u.value.get(k) == e.value.get(k) for k in ("proxy", "toxic") if k in e.value)
            )
        ):
            return u
    return None


def _same_target(u: Event, e: Event) -> bool:
    """Whether u names the proxy and toxic e named (a server fault names neither)."""
    return all(u.value.get(k) == e.value.get(k) for k in ("proxy", "toxic") if k in e.value)


def _killed_before_call(run: Run, c: C.KilledBeforeCall) -> tuple[bool, str, list[int]]:
    kill = _kill(run, c.step)
    guid = run.guid(c.guid)
    seen = [
        e.index
        for e in run.events[: kill.index]
        if (e.f == Op.WAIT_ROW and e.type == "ok" and e.value.get("guid") == guid)
        or (e.f == Op.LEDGER_SNAPSHOT and e.type == "ok" and guid in e.value.get("rows", {}))
    ]
    if not seen:
        if not run.facts.snapshots:
            raise Unjudgeable("the relay's ledger was never read, so its claim cannot be seen")
        return False, f"no ledger read before the kill showed {c.guid}'s row", [kill.index]
    early = [x for x in run.calls(c.guid) if x["received_at"] <= kill.time]
    if early:
        return False, f"the account system received {c.guid}'s call (#{early[0]['seq']}) before the kill", [kill.index]
    in_flight = _in_flight(run, guid, kill.time)
    if not in_flight:
        return False, f"no send of {c.guid} was in flight when the kill came", [kill.index]
    return True, f"row seen, no call received, send in flight at the kill (+{_at(run, kill)})", [seen[-1], kill.index]


def _killed_after_call(run: Run, c: C.KilledAfterCall) -> tuple[bool, str, list[int]]:
    kill = _kill(run, c.step)
    guid = run.guid(c.guid)
    answered = [x for x in run.calls(c.guid) if x.get("answered_at") is not None and x["answered_at"] <= kill.time]
    if not answered:
        return False, f"the account system had answered no call of {c.guid} before the kill", [kill.index]
    done = [
        s.index
        for s in run.facts.snapshots
        if s.index < kill.index and (s.value["rows"].get(guid) or {}).get("status") == "DONE"
    ]
    if done:
        return False, f"the ledger showed {c.guid} DONE before the kill", [done[0], kill.index]
    if not _in_flight(run, guid, kill.time):
        return False, f"the channel had its answer for {c.guid} before the kill", [kill.index]
    return True, f"call #{answered[0]['seq']} answered, no DONE, send in flight at the kill", [kill.index]


def _sent_while_in_flight(run: Run, c: C.SentWhileInFlight) -> tuple[bool, str, list[int]]:
    guid = run.guid(c.guid)
    sends = [
        call
        for n in c.steps
        for call in run.facts.channel_for(guid)
        if run.step(n).start.index < call.index < (run.step(n).end or run.events[-1]).index
    ]
    if not sends:
        return False, f"steps {c.steps} sent nothing of {c.guid}", []
    calls = run.calls(c.guid)
    if not calls:
        return False, f"the account system never received a call of {c.guid}", [s.index for s in sends[:3]]
    first = calls[0]
    t_end = first.get("answered_at") or float("inf")
    late = [
        s
        for s in sends
        if (s.sent_at or s.invoked_at) > t_end or (c.after_call and (s.sent_at or s.invoked_at) < first["received_at"])
    ]
    if late:
        return (
            False,
            f"{len(late)} of {len(sends)} sends of {c.guid} reached the relay outside its first call's flight",
            [s.index for s in late[:5]],
        )
    return True, f"all {len(sends)} sends reached the relay while call #{first['seq']} was in flight", [sends[0].index]


def _held_through(run: Run, c: C.HeldThrough) -> tuple[bool, str, list[int]]:
    start = run.batch(c.step)
    end = run.batch_end(start)
    calls = run.calls(c.guid)
    if not calls or end is None:
        return False, f"no call of {c.guid} was received, or the batch never ended", [start.index]
    first = calls[0]
    if first["received_at"] > start.time:
        return False, f"{c.guid}'s call reached the account system after the batch started", [start.index]
    if first.get("answered_at") is not None and first["answered_at"] < end.time:
        return False, f"{c.guid}'s call was answered before the batch ended", [start.index, end.index]
    return True, f"call #{first['seq']} held from before the batch to after it", [start.index, end.index]


def _call_during_fault(run: Run, c: C.CallDuringFault) -> tuple[bool, str, list[int]]:
    t0, t1, shown = run.fault_window(c.step)
    hit = [x for x in run.calls(c.guid) if t0 <= x["received_at"] <= t1]
    if not hit:
        return False, f"no call of {c.guid} reached the account system while the fault was in force", shown
    return True, f"call #{hit[0]['seq']} received while the fault was in force", shown


def _no_call_during_fault(run: Run, c: C.NoCallDuringFault) -> tuple[bool, str, list[int]]:
    t0, t1, shown = run.fault_window(c.step)
    sent = [s for s in run.facts.channel_for(run.guid(c.guid)) if t0 <= s.invoked_at <= t1]
    if not sent:
        return False, f"the channel sent no {c.guid} while the fault was in force", shown
    hit = [x for x in run.calls(c.guid) if t0 <= x["received_at"] <= t1]
    if hit:
        return False, f"call #{hit[0]['seq']} of {c.guid} reached the account system despite the fault", shown
    return True, f"{len(sent)} send(s) during the fault, no call received", [*shown, sent[0].index]


def _answer_lost(run: Run, c: C.AnswerLost) -> tuple[bool, str, list[int]]:
    step = run.step(c.step)
    guid = run.guid(c.guid)
    sends = [s for s in run.facts.channel_for(guid) if step.start.index < s.index < (step.end or step.start).index]
    lost = [s for s in sends if s.completed and not s.answered]
    if not lost:
        return False, f"every send of {c.guid} in step {c.step} got an answer", [s.index for s in sends]
    gave_up = lost[0].completed_at or float("inf")
    answered = [x for x in run.calls(c.guid) if x.get("answered_at") is not None and x["answered_at"] <= gave_up]
    if not answered:
        return False, f"the account system had answered no call of {c.guid} when the channel gave up", [lost[0].index]
    return True, f"call #{answered[0]['seq']} answered, the channel got nothing", [lost[0].index]


def _account_answered(run: Run, c: C.AccountAnswered) -> tuple[bool, str, list[int]]:
    codes = [x.get("code") for x in run.calls(c.guid)]
    if c.code in codes:
        return True, f"the account system answered {c.code}", []
    return False, f"the account system answered {c.guid}'s calls with {codes or 'nothing'}", []


def _queried(run: Run, c: C.Queried) -> tuple[bool, str, list[int]]:
    if not run.facts.has_stats:
        raise Unjudgeable("the history has no record of the account system's queries")
    guid = run.guid(c.guid)
    t0, t1, shown = float("-inf"), float("inf"), []
    if c.step is not None:
        start = run.batch(c.step)
        end = run.batch_end(start)
        t0, t1, shown = start.time, (end.time if end else float("inf")), [start.index]
    asked = [q for q in run.facts.stats.get("queries", []) if q.get("guid") == guid and t0 <= q["at"] <= t1]
    if not asked:
        return False, f"no query about {c.guid} reached the account system", shown
    fitting = [q for q in asked if c.found is None or bool(q.get("found")) == c.found]
    if not fitting:
        got = "found" if asked[0].get("found") else "not found"
        return False, f"{len(asked)} query(ies) about {c.guid}, answered {got}", shown
    return True, f"{len(fitting)} query(ies) about {c.guid} answered as claimed", shown


def _batch_met(run: Run, c: C.BatchMet) -> tuple[bool, str, list[int]]:
    start = run.batch(c.step)
    rows = run.snapshot_before(start.index).value["rows"]
    argument = start.value.get("argument")
    wall = start.value.get("wall")
    for label in c.guids:
        row = rows.get(run.guid(label))
        if row is None:
            return False, f"{label} had no ledger row when the batch started", [start.index]
        if row.get("status") not in c.statuses:
            return False, f"{label}'s row was {row.get('status')} when the batch started", [start.index]
        if c.older is None or start.f == Op.REPROCESS or argument is None or wall is None:
            continue
        age = wall - float(row.get("updated_at", wall))
        if (age >= float(argument)) != c.older:
            side = "younger" if c.older else "older"
            return False, f"{label}'s row was {age:.2f} s old, {side} than {argument}", [start.index]
    return True, f"{', '.join(c.guids)} met as claimed by the {start.f} run", [start.index]


def _attempts_at_cap(run: Run, c: C.AttemptsAtCap) -> tuple[bool, str, list[int]]:
    start = run.batch(c.step)
    row = run.snapshot_before(start.index).value["rows"].get(run.guid(c.guid))
    if row is None:
        return False, f"{c.guid} had no ledger row when reprocess started", [start.index]
    if "attempts" not in row:
        raise Unjudgeable("the relay's ledger keeps no attempts")
    cap = start.value.get("argument")
    if cap is None or row["attempts"] < cap:
        return False, f"{c.guid}'s row had {row['attempts']} attempts of {cap}", [start.index]
    return True, f"{c.guid}'s row had {row['attempts']} attempts, the cap {cap}", [start.index]


def _kill(run: Run, n: int) -> Event:
    kills = [e for e in run.events if run.step(n).holds(e) and e.f == Op.KILL and e.type == "invoke"]
    if not kills:
        raise Unjudgeable(f"step {n} killed nothing (no relay was running)")
    return kills[0]


def _in_flight(run: Run, guid: str, t: float) -> bool:
    return any(
        s.invoked_at <= t and (s.completed_at is None or s.completed_at >= t) for s in run.facts.channel_for(guid)
    )


def _at(run: Run, e: Event) -> str:
    return f"{e.time - run.facts.start:.3f} s"


JUDGES: dict[type, Callable[[Run, object], tuple[bool, str, list[int]]]] = {
    C.KilledBeforeCall: _killed_before_call,  # type: ignore[dict-item]
    C.KilledAfterCall: _killed_after_call,  # type: ignore[dict-item]
    C.SentWhileInFlight: _sent_while_in_flight,  # type: ignore[dict-item]
    C.HeldThrough: _held_through,  # type: ignore[dict-item]
    C.CallDuringFault: _call_during_fault,  # type: ignore[dict-item]
    C.NoCallDuringFault: _no_call_during_fault,  # type: ignore[dict-item]
    C.AnswerLost: _answer_lost,  # type: ignore[dict-item]
    C.AccountAnswered: _account_answered,  # type: ignore[dict-item]
    C.Queried: _queried,  # type: ignore[dict-item]
    C.BatchMet: _batch_met,  # type: ignore[dict-item]
    C.AttemptsAtCap: _attempts_at_cap,  # type: ignore[dict-item]
}
