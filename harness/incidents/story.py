"""The night cut down to its story: the steps of the GUIDs that broke a rule, and the faults and operations around them.

    steps = around(plan.steps, involved={"g7", "g9"})

Kept: every step naming an involved label (sends, races, holds and releases narrowed to the
involved labels, waits); the kills, starts and batch runs from the first such step to the
last (and a batch run that sent an involved GUID, wherever it is), with the mark each resolve
and purge ages its rows from; the fault windows and
paces in force at a kept send (their opening and closing steps both). Then made whole: a
start is kept only where its slot is down, the first start after a kept kill is kept. The
result passes the scenario file's checks; the shrinker (shrink.py) then removes what the
violation does not need.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

from relaychaos.engine import steps as S
from relaychaos.incidents.balances import Accounts
from relaychaos.incidents.faults import Planned

OPERATIONS = (S.Kill, S.Start, S.Resolve, S.Reprocess, S.Purge)
OPENS: dict[type, type[S.RemoveToxic] | type[S.EnableProxy]] = {
    S.AddToxic: S.RemoveToxic,
    S.DisableProxy: S.EnableProxy,
}
WINDOWS = (S.AddToxic, S.RemoveToxic, S.DisableProxy, S.EnableProxy)


def keeper(involved: set[str]) -> Callable[[Planned], bool]:
    """Which of the night's steps a story of the involved labels may need (the writer keeps them as it goes)."""

    def keep(p: Planned) -> bool:
        step = p.step
        return (
            isinstance(step, OPERATIONS + WINDOWS + (S.Mark,))
            or (isinstance(step, S.ServerFault) and not step.hold_guids)
            or bool(set(S.guids_of(step)) & involved)
        )

    return keep


def _narrowed(p: Planned, involved: set[str]) -> Planned | None:
    """The step about the involved labels only; None when it is about none of them."""
    step = p.step
    if isinstance(step, S.ServerFault) and (step.hold_guids or step.e500_once):
        held = tuple(g for g in step.hold_guids if g in involved)
        failed = tuple(g for g in step.e500_once if g in involved)
        return Planned(S.ServerFault(hold_guids=held, e500_once=failed), p.comment) if held or failed else None
    if isinstance(step, S.Release) and step.guids:
        kept = tuple(g for g in step.guids if g in involved)
        return Planned(S.Release(kept), p.comment) if kept else None
    return p if set(S.guids_of(step)) & involved else None


def _closes(opening: S.Step, step: S.Step) -> bool:
    if isinstance(opening, S.ServerFault):
        return isinstance(step, S.ServerFault) and step.delay_ms is not None and not step.hold_guids
    assert isinstance(opening, (S.AddToxic, S.DisableProxy)), f"not a fault window's opening: {opening!r}"
    want = OPENS[type(opening)]  # _windows opens only these
    return (
        isinstance(step, want)
        and step.proxy == opening.proxy
        and getattr(step, "name", None) == getattr(opening, "name", None)
    )


def _windows(steps: list[Planned]) -> list[tuple[int, int]]:
    """(opening index, closing index) of every fault window and pace: toxics, disabled proxies, delays."""
    out: list[tuple[int, int]] = []
    open_: list[int] = []  # indexes of the windows open so far
    for i, p in enumerate(steps):
        step = p.step
        for n, j in enumerate(open_):
            if _closes(steps[j].step, step):
                out.append((j, i))
                del open_[n]
                break
        if type(step) in OPENS or (isinstance(step, S.ServerFault) and step.delay_ms):
            open_.append(i)
    return out + [(j, len(steps)) for j in open_]


def around(steps: list[Planned], involved: set[str], relays: tuple[str, ...] = ("a",)) -> list[Planned]:
    """The story of the involved labels (see the module doc); `relays`: the slots running from the start."""
    keep: dict[int, Planned] = {}
    for i, p in enumerate(steps):
        narrowed = _narrowed(p, involved)
        if narrowed is not None:
            keep[i] = narrowed
    if not keep:
        return []
    first, last = min(keep), max(keep)
    for i, p in enumerate(steps):
        if isinstance(p.step, OPERATIONS) and (first <= i <= last or set(p.sent) & involved):
            keep[i] = p
    marks = {p.step.name: i for i, p in enumerate(steps) if isinstance(p.step, S.Mark)}
    for since in [getattr(p.step, "since", None) for p in keep.values()]:
        if since in marks:
            keep[marks[since]] = steps[marks[since]]
    sends = [i for i, p in keep.items() if isinstance(p.step, (S.Send, S.Race))]
    for j, k in _windows(steps):
        if any(j < i < k for i in sends):
            keep[j] = steps[j]
            if k < len(steps):
                keep[k] = steps[k]
    return _whole([keep[i] for i in sorted(keep)], steps, sorted(keep), relays)


def _whole(kept: list[Planned], steps: list[Planned], at: list[int], relays: tuple[str, ...]) -> list[Planned]:
    """Starts only where the slot is down; a slot down at a kept send is started (its last start before it)."""
    out, down = [], {p.step.slot for p in steps if isinstance(p.step, S.Start)} - set(relays)
    for n, p in enumerate(kept):
        step = p.step
        if isinstance(step, S.Start):
            if step.slot not in down:
                continue
            down.discard(step.slot)
        if isinstance(step, S.Kill):
            down.add(step.slot)
        if isinstance(step, (S.Send, S.Race)):
            for slot in down & set(step.slots if isinstance(step, S.Race) else (step.slot,)):
                out.append(_next_start(steps, at[n], slot))
                down.discard(slot)
        out.append(p)
    return out


def _next_start(steps: list[Planned], before: int, slot: str) -> Planned:
    """The night's last start of the slot before index `before` (the one that brought it up for this send)."""
    for p in reversed(steps[:before]):
        if isinstance(p.step, S.Start) and p.step.slot == slot:
            return p
    return Planned(S.Start(slot), f"relay {slot} started (it was up for this send in production)")


def accounts(steps: list[S.Step], opened: Accounts) -> dict[str, int]:
    """The opening balances of the accounts the story's sends and races touch (a night of a million transfers opens
    a million accounts; its story needs a handful)."""
    touched: set[str] = set()
    for step in steps:
        if isinstance(step, (S.Send, S.Race)):
            touched |= {step.src, step.dst}
            raw = getattr(step, "raw", None)
            if raw:
                with contextlib.suppress(ValueError, AttributeError):
                    body = json.loads(raw)
                    touched |= {str(body.get("from")), str(body.get("to"))}
    return {name: balance for name, balance in opened.items() if name in touched}


def gives_answers(answers: dict[str, str | list[str]]) -> Callable[[list[Planned]], bool]:
    """Whether a candidate story can give each label as many channel answers as production gave it: its sends make
    from one call to `attempts` calls each, a race one call a copy (the closing phase sends none). A story with fewer
    or more cannot reproduce faithfully, so the shrinker need not replay it."""
    wanted = {label: 1 if isinstance(got, str) else len(got) for label, got in answers.items()}

    def gives(steps: list[Planned]) -> bool:
        low = dict.fromkeys(wanted, 0)
        high = dict.fromkeys(wanted, 0)
        for p in steps:
            step = p.step
            if isinstance(step, S.Send) and step.guid in wanted:
                low[step.guid] += 1
                high[step.guid] += step.attempts
            elif isinstance(step, S.Race) and step.guid in wanted:
                low[step.guid] += step.n
                high[step.guid] += step.n
        return all(low[label] <= n <= high[label] for label, n in wanted.items())

    return gives
