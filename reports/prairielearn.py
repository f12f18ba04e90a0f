"""results.json for a PrairieLearn external grader, made from one grade record (reports.grade_record).

    data = results(record)                 # a dict in PrairieLearn's format
    write(record, "/grade/results/results.json")
    problems = validate(data)              # [] when PrairieLearn reads it as meant

The format is PrairieLearn's "External Grading" page, section "Grading results"
(prairielearn.readthedocs.io/en/latest/externalGrading/): `score` in [0, 1], `gradable`,
`format_errors`, `message`, `output`, and `tests` with name, description, points,
max_points, message, output, as `<pl-external-grader-results>` renders them; at most 1 MB.
A submission that could not be run is `gradable: false` with the reason (PrairieLearn then
awards nothing and does not count the attempt). PrairieLearn shows every test to the student
and has no "after the due date", so the tests of hidden and after-due-date scenarios keep their
points but not their details, unless `reveal_hidden`.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import grade_summary
from .atomic import write_text
from .fieldcheck import (BOOL, LIST, NUMBER, STRING, STRINGS, as_json_problems, check, either)
from .grade_record import SETS, incidents

MAX_BYTES = 1_000_000
MAX_INCIDENTS = 3
MAX_INCIDENT_CHARS = 6000


def results(record: dict, *, reveal_hidden: bool = False) -> dict:
    """The results.json of one submission: a score in [0, 1] and one test per rule entry, or not gradable."""
    shown = SETS if reveal_hidden else ("visible",)
    head = grade_summary.headline(record, shown)
    facts = grade_summary.facts(record, shown)
    if not record.get("gradable", True):
        return {"gradable": False, "format_errors": [grade_summary.reason(record)], "message": head,
                "output": "\n".join([head, *facts])}
    max_score = float(record["max_score"])
    score = min(1.0, max(0.0, float(record["score"]) / max_score)) if max_score > 0 else 0.0
    partial = [f for f in facts if f.startswith("The time budget ran out")]
    return {"gradable": True, "score": round(score, 6), "message": " ".join([head, *partial]),
            "output": "\n".join([head, *facts]),
            "tests": [test(record, rule, rule["set"] in shown) for rule in record.get("rules", [])]}


def test(record: dict, rule: dict, detailed: bool) -> dict:
    """One rule of the rubric over one scenario set; without details, its points alone."""
    n = grade_summary.num
    out = {"name": f"{rule['rule']} ({grade_summary.SET_LABEL[rule['set']]})", "description": rule["what"],
           "points": round(float(rule["points"]), 4), "max_points": round(float(rule["max_points"]), 4)}
    if not detailed:
        return {**out, "message": "Details of these scenarios are not shown.", "output": ""}
    message = f"Held in {rule['held_in']} of {rule['scenarios']} scenario(s): {n(rule['points'])} / " \
              f"{n(rule['max_points'])} points."
    if rule.get("broken_in"):
        message += " Broken in: " + ", ".join(rule["broken_in"]) + "."
    reports = incidents(record, rule)
    shown = [r[:MAX_INCIDENT_CHARS] + ("\n..." if len(r) > MAX_INCIDENT_CHARS else "") for r in reports[:MAX_INCIDENTS]]
    if len(reports) > MAX_INCIDENTS:
        shown.append(f"... and {len(reports) - MAX_INCIDENTS} more incident report(s) like these.")
    return {**out, "message": message, "output": "\n\n".join(shown)}


def write(record: dict, path: Path) -> Path:
    """Write results(record) to `path` atomically (its folder created: PrairieLearn does not make /grade/results)."""
    return write_text(Path(path), json.dumps(results(record), indent=2, ensure_ascii=False) + "\n")


IMAGE = {"url": STRING, "label": STRING}
TOP = {"gradable": BOOL, "score": NUMBER, "format_errors": either(STRING, STRINGS), "message": STRING,
       "output": STRING, "images": LIST, "tests": LIST}
TEST = {"name": STRING, "description": STRING, "points": NUMBER, "max_points": NUMBER, "message": STRING,
        "output": STRING, "images": LIST}


def validate(data) -> list[str]:
    """Every way `data` strays from PrairieLearn's results.json; [] when it is well formed.

    PrairieLearn accepts any extra field ("you may add any additional data"), so only the
    documented ones are checked; `score` is required unless `gradable` is false."""
    problems = check(data, "results", TOP)
    if not isinstance(data, dict):
        return problems
    problems += as_json_problems(data, max_bytes=MAX_BYTES)
    if data.get("gradable", True) is not False:
        if "score" not in data:
            problems.append("results: missing field 'score' (required unless gradable is false)")
        elif NUMBER[0](data["score"]) and not 0 <= data["score"] <= 1:
            problems.append(f"results.score must be in [0, 1], not {data['score']}")
    problems += _images(data.get("images"), "results")
    for i, t in enumerate(data.get("tests") if isinstance(data.get("tests"), list) else []):
        where = f"tests[{i}]"
        problems += check(t, where, TEST)
        if isinstance(t, dict):
            problems += _images(t.get("images"), where)
    return problems


def _images(images, where: str) -> list[str]:
    """Each image is {url, label} or, as older graders wrote it, a bare URL string."""
    if not isinstance(images, list):
        return []
    return [p for i, im in enumerate(images) if not isinstance(im, str)
            for p in check(im, f"{where}.images[{i}]", IMAGE, required=("url",))]
