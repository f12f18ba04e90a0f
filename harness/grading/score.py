"""Scoring: a submission's scenario outcomes, weighed by a rubric, as points per rule and set.

A pure function of its inputs, so that the same outcomes always give the same score.
Per scenario, a rule held unless a verdict names it, except that a scenario which
showed nothing counts against every rule: one that could not run (`error`), one
where the relay would not start (`serve-ready` broken), one the wall budget cut
off (`not-run` with `cut=True`). Scenarios skipped on purpose (`skipped`, or the
stateful machine not run because a named scenario had already shown a bug) count
for nothing. A rule's points are split across the visibility sets in proportion
to the weight of the scenarios each holds; within a set its partial credit is the
weighted share of scenarios in which it held.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from relaychaos.grading.rubric import SETS, Rubric

INCIDENTS_PER_RULE = 2
INCIDENT_CHARS = 4000


@dataclass
class Outcome:
    """One scenario's result for a submission."""

    name: str
    set: str  # visible | hidden | after_due_date
    outcome: str  # passed | failed | error | skipped | not-run
    verdicts: list[dict] = field(default_factory=list)
    message: str | None = None
    seconds: float = 0.0
    cut: bool = False  # not run because the wall budget ran out: counts against every rule

    def counts(self) -> bool:
        return self.outcome in ("passed", "failed", "error") or (self.outcome == "not-run" and self.cut)

    def broke(self, rule: str) -> bool:
        if self.outcome in ("error", "not-run"):
            return True
        rules = {v.get("rule") for v in self.verdicts}
        return rule in rules or "serve-ready" in rules

    def to_dict(self) -> dict:
        return {"name": self.name, "set": self.set, "outcome": self.outcome, "seconds": round(self.seconds, 3),
                "verdicts": self.verdicts, "message": self.message, "cut": self.cut}


def score(outcomes: list[Outcome], rubric: Rubric, what: dict[str, str]) -> tuple[float, list[dict]]:
    """(total points, one entry per rubric rule and set with points, held_in, scenarios, broken_in, incidents)."""
    counted = [o for o in outcomes if o.counts()]
    set_weight = {s: sum(rubric.weight(o.name) for o in counted if o.set == s) for s in SETS}
    total_weight = sum(set_weight.values())
    entries, total = [], 0.0
    for rule, points in rubric.points.items():
        for s in SETS:
            if not set_weight[s]:
                continue
            mine = [o for o in counted if o.set == s]
            held = [o for o in mine if not o.broke(rule)]
            max_points = points * set_weight[s] / total_weight
            got = max_points * sum(rubric.weight(o.name) for o in held) / set_weight[s]
            broken = [o for o in mine if o.broke(rule)]
            entries.append({"rule": rule, "group": rubric.group_of[rule], "what": what.get(rule, ""), "set": s,
                            "points": round(got, 4), "max_points": round(max_points, 4), "held_in": len(held),
                            "scenarios": len(mine), "broken_in": [o.name for o in broken],
                            "incidents": [_incident(o, rule) for o in broken[:INCIDENTS_PER_RULE]]})
            total += got
    return round(total, 4), entries


def _incident(o: Outcome, rule: str) -> str:
    """What a student reads about one scenario that broke `rule`: why it counts, then the incident report."""
    if o.outcome == "not-run":
        return f"scenario {o.name}: not run, the submission's time budget ran out first"
    if o.outcome == "error":
        head = f"scenario {o.name} could not run"
    elif rule not in {v.get("rule") for v in o.verdicts}:
        head = f"scenario {o.name}: the relay would not start (serve-ready), so nothing could be shown for {rule}"
    else:
        head = f"scenario {o.name} broke {rule}"
    text = (o.message or "").strip()
    if len(text) > INCIDENT_CHARS:
        text = text[:INCIDENT_CHARS] + "\n... (cut; the full report is in the submission's results)"
    return f"{head}\n\n{text}" if text else head
