"""results.json for a PrairieLearn external grader, made from one grade record (reports.grade_record).

    data = results(record)                 # a dict in PrairieLearn's format
    write(record, "/grade/results/results.json")
    problems = validate(data)              # [] when PrairieLearn reads it as meant

The format is PrairieLearn's "External Grading" page, section "Grading results"
(prairielearn.readthedocs.io/en/latest/externalGrading/): `score` in [0, 1], `gradable`,
`format_errors`, `message`, `output`, and `tests` with name, description, points,
max_points, message, output, as `<pl-external-grader-results>` renders them; at most 1 MB.
One test per item of the rubric (a behaviour) and scenario set; the results' output holds
each incident report once, and a test names the incidents that cost it.
A submission that could not be run is `gradable: false` with the reason (PrairieLearn then
awards nothing and does not count the attempt). PrairieLearn shows every test to the student
and has no "after the due date", so the tests of hidden and after-due-date scenarios keep their
points but not their details, unless `reveal_hidden`.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import grade_summary, gradescope
from .atomic import write_text
from .fieldcheck import BOOL, LIST, NUMBER, STRING, STRINGS, as_json_problems, check, either
from .grade_record import SETS

MAX_BYTES = 1_000_000


def results(record: dict, *, reveal_hidden: bool = False) -> dict:
    """The results.json of one submission: a score in [0, 1] and one test per item entry, or not gradable."""
    shown = SETS if reveal_hidden else ("visible",)
    head = grade_summary.headline(record, shown)
    facts = grade_summary.facts(record, shown)
    if not record.get("gradable", True):
        tail = grade_summary.output_tail(record)
        return {
            "gradable": False,
            "format_errors": [grade_summary.reason(record)],
            "message": head,
            "output": "\n".join([head, *facts] + (["", "What the relay printed last:", tail] if tail else [])),
        }
    max_score = float(record["max_score"])
    score = min(1.0, max(0.0, float(record["score"]) / max_score)) if max_score > 0 else 0.0
    partial = [f for f in facts if f.startswith(("The time budget ran out", "Score capped"))]
    incidents = [
        f"Incident: scenario {i['scenario']}\n{gradescope.cut(i['text'])}"
        for i in record.get("incidents", [])
        if i["set"] in shown
    ]
    return {
        "gradable": True,
        "score": round(score, 6),
        "message": " ".join([head, *partial]),
        "output": "\n\n".join(["\n".join([head, *facts]), *incidents]),
        "tests": [test(record, item, item["set"] in shown) for item in record.get("items", [])],
    }


def test(record: dict, item: dict, detailed: bool) -> dict:
    """One item of the rubric over one scenario set; without details, its points alone. The incident reports
    are in the results' output, once each; a test names them and says in one line per verdict what broke."""
    n = grade_summary.num
    label = "" if item["set"] == "visible" else f" ({grade_summary.SET_LABEL[item['set']]})"
    out = {
        "name": f"{item['title']}{label}",
        "description": "checked by " + ", ".join(item.get("rules", [])),
        "points": round(float(item["points"]), 2),
        "max_points": round(float(item["max_points"]), 2),
    }
    if not detailed:
        return {**out, "message": "Details of these scenarios are not shown.", "output": ""}
    message = (
        f"Held in {item['held_in']} of {item['scenarios']} scenario(s): {n(item['points'])} / "
        f"{n(item['max_points'])} points."
    )
    if item.get("broken_in"):
        message += " Broken in: " + ", ".join(item["broken_in"]) + " (incident reports in the output above)."
    lines = [f"{f['incident']}: {why}" for f in item.get("failures", []) for why in f.get("why", [])]
    return {**out, "message": message, "output": "\n".join(lines)}


def write(record: dict, path: Path) -> Path:
    """Write results(record) to `path` atomically (its folder created: PrairieLearn does not make /grade/results)."""
    return write_text(Path(path), json.dumps(results(record), indent=2, ensure_ascii=False) + "\n")


IMAGE = {"url": STRING, "label": STRING}
TOP = {
    "gradable": BOOL,
    "score": NUMBER,
    "format_errors": either(STRING, STRINGS),
    "message": STRING,
    "output": STRING,
    "images": LIST,
    "tests": LIST,
}
TEST = {
    "name": STRING,
    "description": STRING,
    "points": NUMBER,
    "max_points": NUMBER,
    "message": STRING,
    "output": STRING,
    "images": LIST,
}


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
    tests = data.get("tests")
    for i, t in enumerate(tests if isinstance(tests, list) else []):
        where = f"tests[{i}]"
        problems += check(t, where, TEST)
        if isinstance(t, dict):
            problems += _images(t.get("images"), where)
    return problems


def _images(images, where: str) -> list[str]:
    """Each image is {url, label} or, as older graders wrote it, a bare URL string."""
    if not isinstance(images, list):
        return []
    return [
        p
        for i, im in enumerate(images)
        if not isinstance(im, str)
        for p in check(im, f"{where}.images[{i}]", IMAGE, required=("url",))
    ]
