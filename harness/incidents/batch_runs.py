"""A night's batch runs as steps: reprocess with its logged --max-attempts (and the calls it sent), resolve and purge
with their rows as old as they were, aged since a mark (relaychaos.incidents.reconstruct, whose walk places it).

    step = batch_step(op, calls, night, safe_s, mark)     # mark: the name of the Mark its rows are aged from
    step = mark_step(op, name)                            # where the night passed the moment op's age before it
"""

from __future__ import annotations

from relaychaos.engine import steps as S
from relaychaos.engine.story_checks import LIMIT_S
from relaychaos.incidents.faults import Planned, lines
from relaychaos.incidents.guids import GuidState
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


def batch_step(
    op: OpLine, calls: list[AccountLine], night: dict[str, GuidState], safe_s: float, mark: str | None
) -> Planned:
    """The batch run's step; a resolve or purge ages its rows since its mark (see the module doc)."""
    arg, where = op.argument, op.where
    assert arg is not None, f"{where}: a batch run without its argument"  # records.Converter requires one
    if op.command == "reprocess":
        sent = (
            f"; {lines(calls)}: {', '.join(night[c.guid].label for c in calls[:20])} sent by this run"
            if calls
            else "; it sent nothing"
        )
        return Planned(
            S.Reprocess(max_attempts=max(1, int(arg))),
            f"{where}: reprocess --max-attempts {arg:g}{sent}",
            tuple(night[c.guid].label for c in calls),
        )
    aged = f"the time since mark {mark}, at least" if mark else "here"
    if op.command == "resolve":
        age = safe_s if mark else min(max(arg, safe_s), LIMIT_S)
        return Planned(
            S.Resolve(min_age_s=age, since=mark),
            f"{where}: resolve --min-age {arg:g} ({aged} {age:g}: rows as old as they were), at its logged moment",
        )
    keep = min(arg, LIMIT_S)
    return Planned(
        S.Purge(retention_s=keep if not mark else 0.0, since=mark),
        f"{where}: purge --retention {arg:g} ({aged} {keep if not mark else 0.0:g}: rows as old as they were)",
    )
