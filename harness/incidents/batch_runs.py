"""A night's batch runs as steps: reprocess with its logged --max-attempts (and the calls it sent), resolve and purge
with their rows as old as they were, aged since a mark (relaychaos.incidents.reconstruct, whose walk places it).

    step = batch_step(op, calls, night, safe_s, mark)     # mark: the name of the Mark its rows are aged from
    step = mark_step(op, name)                            # where the night passed the moment op's age before it
    marks = Marks(bundle.operations); marks.passed(op, name, out); marks.sending(out); marks.of_run(op)

A mark the night passes before anything was sent is made only when the first send comes (nothing in the ledger was
changed between the two): a resolve or purge that comes first finds an empty ledger, so it runs at once, unaged
(a resolve aged from such a mark would wait its safe --min-age for nothing).
"""

from __future__ import annotations

from collections.abc import Iterable

from relaychaos.engine import steps as S
from relaychaos.engine.story_checks import LIMIT_S
from relaychaos.incidents.faults import Planned, lines
from relaychaos.incidents.guids import Night
from relaychaos.incidents.records import AccountLine, OpLine

MARK_WAIT_S = 0.5  # a mark's wait: the rows changed before it and after it are this far apart in age at least


def mark_step(op: OpLine, name: str) -> Planned:
    """The mark op's rows are aged from (see relaychaos.engine.steps.Mark)."""
    what = "--min-age" if op.command == "resolve" else "--retention"
    return Planned(
        S.Mark(name, wait_s=MARK_WAIT_S),
        f"{op.argument:g} s before {op.where}'s {op.command} {what} {op.argument:g}: the rows changed before "
        f"here were old enough for it, those after were not (mark {name})",
    )


AGED = ("resolve", "purge")  # the batch commands whose argument is an age


class Marks:
    """The marks of a night's resolve and purge runs, made as the walk passes them (see the module doc)."""

    def __init__(self, operations: Iterable[OpLine]):
        # id of each resolve and purge run -> (the run, the name of the mark its rows are aged from)
        self.of: dict[int, tuple[OpLine, str]] = {
            id(o): (o, f"age-{n}") for n, o in enumerate(operations, 1) if o.event == "batch" and o.command in AGED
        }
        self.made: set[str] = set()
        self.waiting: list[tuple[str, Planned]] = []  # passed before anything was sent: made at the first send
        self.sent = False

    def passed(self, op: OpLine, name: str, out: list) -> None:
        """The walk passed op's mark: made now, or at the first send when nothing was sent yet."""
        if self.sent:
            out.append(mark_step(op, name))
            self.made.add(name)
        else:
            self.waiting.append((name, mark_step(op, name)))

    def sending(self, out: list) -> None:
        """A send is planned next: the marks waiting for one are made first."""
        if not self.sent:
            self.sent = True
            out += [p for _, p in self.waiting]
            self.made.update(name for name, _ in self.waiting)
            self.waiting.clear()

    def of_run(self, op: OpLine) -> str | None:
        """The mark a resolve or purge run ages its rows from; None for another run, or one that comes before
        anything was sent (its mark is never made)."""
        name = self.of.get(id(op), (op, None))[1]
        self.waiting = [(n, p) for n, p in self.waiting if n != name]
        return name if name in self.made else None


def batch_step(op: OpLine, calls: list[AccountLine], night: Night, safe_s: float, mark: str | None) -> Planned:
    """The batch run's step; a resolve or purge ages its rows since its mark (see the module doc)."""
    arg, where = op.argument, op.where
    assert arg is not None, f"{where}: a batch run without its argument"  # records.Converter requires one
    if op.command == "reprocess":
        sent = (
            f"; {lines(calls)}: {', '.join(night.label(c.guid) for c in calls[:20])} sent by this run"
            if calls
            else "; it sent nothing"
        )
        return Planned(
            S.Reprocess(max_attempts=max(1, int(arg))),
            f"{where}: reprocess --max-attempts {arg:g}{sent}",
            tuple(night.label(c.guid) for c in calls),
        )
    if op.command == "resolve":
        age = safe_s if mark else min(max(arg, safe_s), LIMIT_S)
        step: S.Resolve | S.Purge = S.Resolve(min_age_s=age, since=mark)
    else:
        age = 0.0 if mark else min(arg, LIMIT_S)
        step = S.Purge(retention_s=age, since=mark)
    what = "--min-age" if op.command == "resolve" else "--retention"
    # a resolve or purge without a mark came before anything was sent (Marks.of_run)
    aged = (
        f"the time since mark {mark}, at least {age:g}: rows as old as they were"
        if mark
        else f"{age:g}: nothing was sent before it, so the ledger is empty and no row's age can matter"
    )
    moment = ", at its logged moment" if op.command == "resolve" else ""
    return Planned(step, f"{where}: {op.command} {what} {arg:g} ({aged}){moment}")
