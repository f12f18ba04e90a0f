"""From a submission's pytest results to its graded record: outcomes in a student's words, scored by the rubric.

Every text kept in a record is as reports.student_text makes it: GUIDs as the scenario's
labels (read from each scenario's history), the submission's folder as nothing, no ports,
pids, sandbox folders or worker names; so a regrade writes the same words.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from relaychaos.grading.rubric import Rubric
from relaychaos.grading.score import Outcome, score
from relaychaos.reports.atomic import write_text
from relaychaos.reports.student_text import clean

STATEFUL = "stateful"


def labels_of(history: Path) -> dict[str, str]:
    """GUID -> scenario label, as the runner recorded them in a history; {} when there is none to read."""
    from relaychaos.history import iter_events

    out: dict[str, str] = {}
    try:
        for e in iter_events(history):
            if e.f == "guid" and "guid" in e.value:
                out[e.value["guid"]] = e.value["label"]
    except (OSError, ValueError):
        return out
    return out


def outcome(name: str, set_name: str, result: dict, run_folder: Path, places: dict[str, str]) -> Outcome:
    """One scenario's pytest result as an Outcome, its message and verdicts in a student's words."""
    labels: dict[str, str] = {}
    for rel in result.get("histories") or ([result["history"]] if result.get("history") else []):
        labels.update(labels_of(run_folder / rel))
    message = result.get("message")
    if name == STATEFUL and (result.get("stateful") or {}).get("first_report"):
        message = machine_message(result["stateful"])
    verdicts = [
        {
            "rule": v.get("rule"),
            "label": labels.get(v.get("guid") or "", None if not v.get("guid") else "<guid>"),
            "summary": clean(v.get("summary"), labels, places),
            "clause": v.get("clause"),
            **({"unknown": True} if (v.get("details") or {}).get("unknown") else {}),
        }
        for v in result.get("verdicts", [])
    ]
    return Outcome(
        name,
        set_name,
        result["outcome"],
        verdicts,
        clean(message, labels, places) or None,
        result.get("duration_s", 0.0),
    )


def machine_message(info: dict) -> str:
    """What a student reads of the machine's failure: the shrunk story, or the first found if none was kept.

    The grade counts the first failing example as found (the same on every regrade); the story
    shown is the shortest that shrinking reached within its time budget, said so when it was cut.
    """
    last = info.get("last_report")
    if not last or info.get("shrink_s") is None:
        return info["first_report"] + "\n\n(not shrunk: this is the failing example as first found)"
    how = (
        "shrunk to its end"
        if info.get("shrunk")
        else "not fully shrunk: the time budget ended the shrinking, so the story may be longer than it needs to be"
    )
    first = info["first_report"].split("\n", 1)[0]
    return f"{last}\n\n({how}; the grade counts the first failing example, {first.split(': ', 1)[-1]})"


def record(sub, rubric: Rubric, seed: int, **fields) -> dict:
    """A record's fields for one submission (see relaychaos.reports.grade_record), `fields` on top."""
    return {
        "submission": sub.name,
        "path": str(sub.folder),
        "manifest": str(sub.manifest) if sub.manifest else None,
        "seed": seed,
        "gradable": True,
        "error": None,
        "timed_out": False,
        "sandbox": {},
        "rubric": rubric.describe(),
        "max_score": rubric.max_score,
        "notes": [],
        "cap": None,
        "incidents": [],
        "stateful": {"ran": False, "shrunk": False, "why_not": None},
        "harness": harness(),
        "graded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        **fields,
    }


def harness() -> dict:
    """The version of relaychaos that graded."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return {"version": version("relaychaos")}
    except PackageNotFoundError:
        return {"version": "unknown"}


def scored(outcomes: list[Outcome], rubric: Rubric) -> dict:
    """The record's score, items, cap, incidents and scenarios for these outcomes."""
    return {**score(outcomes, rubric), "scenarios": [o.to_dict() for o in outcomes]}


def zero(rubric: Rubric) -> dict:
    """The scored fields of a submission that could not be graded: every item at 0, nothing run."""
    items = [
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
        for i in rubric.items
    ]
    return {"score": 0.0, "items": items, "cap": None, "incidents": [], "review": [], "scenarios": []}


def save(rec: dict, out: Path) -> dict:
    write_text(out / "grade.json", json.dumps(rec, indent=2, ensure_ascii=False))
    return rec
