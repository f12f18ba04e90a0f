"""What the stateful machine tells Hypothesis to seek (its `target()` scores), from the rules an example drew.

The scores are functions of the draws alone, never of what happened when they ran: Hypothesis's mutations and
its target phase choose the next stories by these scores, so a score read from timing (did the fault meet a
transfer?) would make a rerun with the same seed draw other stories than the run before it.
"""

from __future__ import annotations

from collections.abc import Iterable

TRANSFERS = frozenset({"new_transfer", "resend", "race_new", "race_resend", "batch"})
CARRIES_ITS_TRANSFER = frozenset({"kill-mid-transfer"})  # the fault holds a transfer of its own
Trace = Iterable[tuple[str, tuple[tuple[str, object], ...]]]  # (rule, its sorted arguments), as drawn


def scores(trace: Trace) -> dict[str, float]:
    """{label: score}: the faults drawn that a transfer or batch run drawn after them (before a heal) may meet,
    and the kinds of step drawn (each fault and batch command its own kind)."""
    active: set[str] = set()
    may_meet: set[str] = set()
    kinds: set[str] = set()
    for rule, arguments in trace:
        given = dict(arguments)
        kind = str(given.get("name", given.get("command", "")))
        kinds.add(f"{rule}:{kind}" if kind else rule)
        if rule == "fault":
            (may_meet if kind in CARRIES_ITS_TRANSFER else active).add(kind)
        elif rule == "heal":
            active.clear()
        elif rule in TRANSFERS:
            may_meet |= active
    return {"faults drawn before a transfer": float(len(may_meet)), "kinds of step drawn": float(len(kinds))}
