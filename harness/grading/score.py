"""Scoring: a submission's scenario outcomes, weighed by a rubric (v2), as points per behaviour and set.

A pure function of its inputs, so that the same outcomes always give the same score.
A failure (a verdict of rule R in scenario S) counts against one item, the rubric's
item_for(R, S). A scenario that could not run (`error`) or that the wall budget cut off
(`not-run` with `cut=True`) counts against every item whose scenarios it is among; one where
the relay would not start (`serve-ready` broken) against the items that name it (not by "*")
and the item holding `serve-ready`: the other scenarios show the rest.
Scenarios skipped on purpose (`skipped`, or the stateful machine not run because a named
scenario had already shown a bug) count for nothing. An item nothing can judge on the relay is
"not checked", 0 of 0 points, neither held nor broken: every rule of it is one the relay's profile
does not offer (a keyed service's ledger, its answers), or every scenario it names was skipped
because the relay lacks a command it runs; the total's maximum is the sum of the items checked.
An item's points are split across the visibility sets in proportion to the weight of its
scenarios in each (an item no scenario run exercises, as in a run narrowed to a few scenarios,
keeps its points: nothing showed it broken); within a set, an item with partial "none" is lost
whole when any of its scenarios there shows it broken, one with "share" keeps the weighted share
of them in which it held. A cap whose rules any counted scenario broke bounds the total.

Each failing scenario is one incident (its report, once); an item names the incidents
that cost it, with the one-line summaries of the verdicts it lost them to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from relaychaos.grading.rubric import SETS, Item, Rubric
from relaychaos.records.base import UNSET
from relaychaos.records.grade import Cap, Failure, Incident, ItemEntry, ScenarioRun, Verdict
from relaychaos.reports.grade_summary import NOT_EXERCISED_NOTE

SHOWED_NOTHING = "serve-ready"  # the relay would not start: the scenario showed nothing else
EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass
class Outcome:
    """One scenario's result for a submission (its texts already as a student reads them)."""

    name: str
    set: str  # visible | hidden | after_due_date
    outcome: str  # passed | failed | error | skipped | not-run | not exercised (its fault met nothing: under review)
    verdicts: list[Verdict] = field(default_factory=list)
    message: str | None = None
    seconds: float = 0.0
    cut: bool = False  # not run because the wall budget ran out: counts against every item
    relay_lacks: str | None = None  # skipped: the relay lacks what the scenario runs (the skip's reason)

    def counts(self) -> bool:
        return self.outcome in ("passed", "failed", "error") or (self.outcome == "not-run" and self.cut)

    def showed_nothing(self) -> bool:
        return self.outcome in ("error", "not-run") or any(v.rule == SHOWED_NOTHING for v in self.verdicts)

    def failures_of(self, item: Item, rubric: Rubric) -> list[Verdict]:
        """The verdicts of this scenario that count against `item` (a rule not judged counts against none)."""
        return [v for v in self.verdicts if v.unknown is not True and rubric.item_for(v.rule or "", self.name) == item]

    def not_judged(self) -> list[str]:
        """The rules whose checker raised in this scenario: neither held nor broken, so the grade needs a look."""
        return [v.rule or "" for v in self.verdicts if v.unknown is True]

    def broke(self, item: Item, rubric: Rubric) -> bool:
        """The scenario shows `item` broken: a verdict counts against it, the scenario could not run or was cut
        (every item it is among), or the relay would not start there (the items naming the scenario)."""
        if not item.matches(self.name):
            return False
        if self.outcome in ("error", "not-run") or self.failures_of(item, rubric):
            return True
        return self.showed_nothing() and item.names(self.name)

    def to_run(self) -> ScenarioRun:
        """The scenario as the grade record keeps it."""
        return ScenarioRun.from_builtins(
            {
                "name": self.name,
                "set": self.set,
                "outcome": self.outcome,
                "seconds": round(self.seconds, 3),
                "verdicts": [v.to_builtins() for v in self.verdicts],
                "cut": self.cut,
            }
        )


@dataclass
class Score:
    """The scored fields of a grade record: the total, one entry per item and set, the cap that bounded it, one
    incident per failing scenario, the rules not judged and the scenarios not exercised (under review)."""

    score: float
    items: list[ItemEntry]
    cap: Cap | None
    incidents: list[Incident]
    review: list[str]
    max_score: float = 0.0  # the items' max_points: the rubric's total less the items not checked


def score(outcomes: list[Outcome], rubric: Rubric, unchecked: Mapping[str, str] = EMPTY) -> Score:
    """The score of these outcomes: the review lists the rules not judged (scenario: rule) and the scenarios not
    exercised, which cost nothing and ask an instructor to look: such a grade is never silently full marks.
    `unchecked`: rule -> why the relay's profile cannot be judged by it (relaychaos.checkers.not_checked)."""
    counted = [o for o in outcomes if o.counts()]
    entries = [e for item in rubric.items for e in _item_entries(item, outcomes, counted, rubric, unchecked)]
    total = sum(exact for _, exact in entries)
    cap = _cap(counted, rubric)
    if cap is not None and total > cap.at_most:
        cap.lost = round(total - cap.at_most, 2)
        total = cap.at_most
    elif cap is not None:
        cap.lost = 0.0
    review = [f"{o.name}: {rule}" for o in counted for rule in o.not_judged()]
    review += [f"{o.name}: {NOT_EXERCISED_NOTE}" for o in outcomes if o.outcome == "not exercised"]
    max_score = round(sum(e.max_points for e, _ in entries), 4)
    return Score(round(total, 2), [e for e, _ in entries], cap, incidents(counted), review, max_score)


def _item_entries(
    item: Item, outcomes: list[Outcome], counted: list[Outcome], rubric: Rubric, unchecked: Mapping[str, str]
) -> list[tuple[ItemEntry, float]]:
    why = not_checked(item, outcomes, unchecked)
    return _not_checked(item, why) if why else _entries(item, counted, rubric)


def not_checked(item: Item, outcomes: list[Outcome], unchecked: Mapping[str, str]) -> str | None:
    """Why nothing can judge `item` on this relay, or None: every rule of it is not checked on the relay's
    profile, or no scenario of it counted and those it names were skipped for what the relay lacks."""
    if item.rules and all(r in unchecked for r in item.rules):
        return "; ".join(dict.fromkeys(unchecked[r] for r in item.rules))
    mine = [o for o in outcomes if item.matches(o.name)]
    lacking = [o.relay_lacks for o in mine if o.relay_lacks]
    if lacking and not any(o.counts() for o in mine):
        return lacking[0]
    return None


def _not_checked(item: Item, why: str) -> list[tuple[ItemEntry, float]]:
    entry = ItemEntry.from_builtins(
        {
            "item": item.id,
            "title": item.title,
            "rules": list(item.rules),
            "contract": list(item.contract),
            "partial": item.partial,
            "set": "visible",
            "points": 0.0,
            "max_points": 0.0,
            "held_in": 0,
            "scenarios": 0,
            "not_checked": why,
        }
    )
    return [(entry, 0.0)]


def _entry(
    item: Item,
    set_name: str,
    points: float,
    max_points: float,
    here: list[Outcome],
    broken: list[Outcome],
    rubric: Rubric,
) -> ItemEntry:
    return ItemEntry.from_builtins(
        {
            "item": item.id,
            "title": item.title,
            "rules": list(item.rules),
            "contract": list(item.contract),
            "partial": item.partial,
            "set": set_name,
            "points": points,
            "max_points": max_points,
            "held_in": len(here) - len(broken),
            "scenarios": len(here),
            "broken_in": [o.name for o in broken],
            "failures": [_failure(o, item, rubric).to_builtins() for o in broken],
        }
    )


def _entries(item: Item, counted: list[Outcome], rubric: Rubric) -> list[tuple[ItemEntry, float]]:
    """The item's entries, one per scenario set it has scenarios in, each with its exact (unrounded) points."""
    mine = [o for o in counted if item.matches(o.name)]
    item_weight = sum(rubric.weight(o.name) for o in mine)
    if not mine:  # no scenario run exercises it (a run narrowed with --scenarios): nothing showed it broken
        return [(_entry(item, "visible", item.points, item.points, [], [], rubric), item.points)]
    out = []
    for s in SETS:
        here = [o for o in mine if o.set == s]
        if not here:
            continue
        weight = sum(rubric.weight(o.name) for o in here)
        max_points = item.points * weight / item_weight
        broken = [o for o in here if o.broke(item, rubric)]
        if item.partial == "share":
            got = max_points * (weight - sum(rubric.weight(o.name) for o in broken)) / weight
        else:
            got = 0.0 if broken else max_points
        out.append((_entry(item, s, round(got, 4), round(max_points, 4), here, broken, rubric), got))
    return out


def _failure(o: Outcome, item: Item, rubric: Rubric) -> Failure:
    """Why one scenario cost an item: the incident's name and the verdicts' one-line summaries."""
    if o.outcome == "not-run":
        why = ["not run: the submission's time budget ran out first"]
    elif o.outcome == "error":
        why = ["the scenario could not run"]
    elif any(v.rule == SHOWED_NOTHING for v in o.verdicts) and not o.failures_of(item, rubric):
        why = ["the relay would not start, so nothing could be shown"]
    else:
        lines = [f"[{v.rule}] {_who(v)}{v.summary or ''}" for v in o.failures_of(item, rubric)]
        why = list(dict.fromkeys(lines))  # one line per distinct verdict: how many copies raced is the timeline's
    return Failure(incident=o.name, why=why)


def _who(verdict: Verdict) -> str:
    return f"GUID {verdict.label}: " if verdict.label else ""


def incidents(counted: list[Outcome]) -> list[Incident]:
    """One incident per scenario that did not hold: its name, set, outcome, the rules it broke, its report."""
    out = []
    for o in counted:
        if o.outcome == "passed":
            continue
        rules = list(dict.fromkeys(v.rule for v in o.verdicts if v.rule))
        text = o.message or (
            "not run: the submission's time budget ran out first"
            if o.outcome == "not-run"
            else "the scenario could not run"
        )
        out.append(
            Incident.from_builtins(
                {"id": o.name, "scenario": o.name, "set": o.set, "outcome": o.outcome, "rules": rules, "text": text}
            )
        )
    return out


def _cap(counted: list[Outcome], rubric: Rubric) -> Cap | None:
    """The lowest cap whose rules some counted scenario broke, with where."""
    hit: list[Cap] = []
    for cap in rubric.caps:
        where = [o.name for o in counted if any(v.rule in cap.rules for v in o.verdicts)]
        if where:
            hit.append(Cap(at_most=cap.at_most, why=cap.why, rules=list(cap.rules), broken_in=where, lost=UNSET))
    return min(hit, key=lambda c: c.at_most) if hit else None
