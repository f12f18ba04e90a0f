"""From a submission's pytest results to its graded record: outcomes in a student's words, scored by the rubric.

Every text kept in a record is as reports.student_text makes it: GUIDs as the scenario's
labels (read from each scenario's history), the submission's folder as nothing, no ports,
pids, sandbox folders or worker names; so a regrade writes the same words.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from relaychaos.atomic import write_text
from relaychaos.grading.rubric import Rubric
from relaychaos.grading.score import EMPTY, Outcome, Score, score
from relaychaos.grading.submissions import Submission
from relaychaos.history import iter_events
from relaychaos.records.base import UNSET
from relaychaos.records.grade import GradeRecord, HarnessInfo, ItemEntry, ScenarioRun, Verdict
from relaychaos.records.results import MachineAccount, ScenarioResult
from relaychaos.reports.student_text import clean

STATEFUL = "stateful"


def labels_of(history: Path) -> dict[str, str]:
    """GUID -> scenario label, as the runner recorded them in a history; {} when there is none to read."""
    out: dict[str, str] = {}
    try:
        for e in iter_events(history):
            if e.f == "guid" and "guid" in e.value:
                out[e.value["guid"]] = e.value["label"]
    except (OSError, ValueError):
        return out
    return out


def outcome(name: str, set_name: str, result: ScenarioResult, run_folder: Path, places: dict[str, str]) -> Outcome:
    """One scenario's pytest result as an Outcome, its message and verdicts in a student's words."""
    labels: dict[str, str] = {}
    for rel in result.histories or ([result.history] if result.history else []):
        labels.update(labels_of(run_folder / rel))
    message = result.message
    if name == STATEFUL and result.stateful is not None and result.stateful.first_report:
        message = machine_message(result.stateful)
    verdicts = [
        Verdict(
            rule=v.rule,
            label=labels.get(v.guid or "", None if not v.guid else "<guid>"),
            summary=clean(v.summary, labels, places),
            clause=v.clause,
            unknown=True if v.unknown else UNSET,
        )
        for v in result.verdicts
    ]
    return Outcome(name, set_name, result.outcome, verdicts, clean(message, labels, places) or None, result.duration_s)


def machine_message(info: MachineAccount) -> str:
    """What a student reads of the machine's failure: the shrunk story, or the first found if none was kept.

    The grade counts the first failing example as found (the same on every regrade); the story
    shown is the shortest that shrinking reached within its time budget, said so when it was cut.
    """
    first = info.first_report if info.first_report is not UNSET and info.first_report else ""
    last = info.last_report if info.last_report is not UNSET else None
    if not last or info.shrink_s is UNSET or info.shrink_s is None:
        return first + "\n\n(not shrunk: this is the failing example as first found)"
    how = (
        "shrunk to its end"
        if info.shrunk is True
        else "not fully shrunk: the time budget ended the shrinking, so the story may be longer than it needs to be"
    )
    head = first.split("\n", 1)[0]
    return f"{last}\n\n({how}; the grade counts the first failing example, {head.split(': ', 1)[-1]})"


def record(
    sub: Submission, rubric: Rubric, seed: int, scored: Score, runs: list[ScenarioRun], **fields: Any
) -> GradeRecord:
    """The record of one submission (relaychaos.records.grade): its score and scenarios, `fields` on top."""
    values: dict[str, Any] = {
        "submission": sub.name,
        "path": str(sub.folder),
        "manifest": str(sub.manifest) if sub.manifest else None,
        "seed": seed,
        "gradable": True,
        "rubric": rubric.describe(),
        "max_score": scored.max_score,
        "harness": harness(),
        "graded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "score": scored.score,
        "items": scored.items,
        "cap": scored.cap,
        "incidents": scored.incidents,
        "review": scored.review,
        "scenarios": runs,
    }
    return GradeRecord(**{**values, **fields})


def harness() -> HarnessInfo:
    """The version of relaychaos that graded."""
    try:
        return HarnessInfo(version=version("relaychaos"))
    except PackageNotFoundError:
        return HarnessInfo(version="unknown")


def scored(
    outcomes: list[Outcome], rubric: Rubric, unchecked: Mapping[str, str] = EMPTY
) -> tuple[Score, list[ScenarioRun]]:
    """The record's score, items, cap, incidents and review for these outcomes, and its scenarios; `unchecked`:
    the rules the relay's profile cannot be judged by (relaychaos.grading.score.score)."""
    return score(outcomes, rubric, unchecked), [o.to_run() for o in outcomes]


def zero(rubric: Rubric) -> Score:
    """The scored fields of a submission that could not be graded: every item at 0, nothing run."""
    items = [
        ItemEntry.from_builtins(
            {
                "item": i.id,
                "title": i.title,
                "rules": list(i.rules),
                "contract": list(i.contract),
                "partial": i.partial,
                "set": "visible",
                "points": 0.0,
                "max_points": i.points,
                "held_in": 0,
                "scenarios": 0,
                "broken_in": [],
                "failures": [],
            }
        )
        for i in rubric.items
    ]
    return Score(0.0, items, None, [], [], rubric.max_score)


def save(rec: GradeRecord, out: Path) -> GradeRecord:
    """Write the record as out/grade.json, atomically."""
    write_text(out / "grade.json", rec.to_json(ensure_ascii=False))
    return rec
