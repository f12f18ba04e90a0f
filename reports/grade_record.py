"""grade.json: the record of one graded submission, the single source every grading output is made from.

    record = load(path)          # a plain dict, as the grading run wrote it
    problems = validate(record)  # [] when the writers below can use it

`relaychaos grade` writes one per submission, as `<out>/submissions/<safe-name>/grade.json`;
reports.gradescope, reports.prairielearn, reports.gradebook and reports.student_page read
nothing else, and gradebook.merge joins the records of several shards. Every text in it is
as a student reads it (reports.student_text: no absolute paths, ports, pids, GUIDs). The
fields (* required; the others have the defaults in brackets when missing):

    submission*        display name: the submission's folder name (spaces, unicode and all)
    path*              absolute path of the submission's folder: its identity across shards (never shown)
    manifest           its relay.toml, or null when none was found [null]
    seed*              the seed of every random choice of the run (an integer)
    gradable*          false: the submission could not be run at all (no manifest, will not start)
    error              why not, in words a student can act on (a relay that would not start: the
                       tail of its own output) [null]; required when not gradable
    execution_time_s   wall time of the grading [0]
    timed_out          the wall budget ran out: the results are partial [false]
    sandbox            the sandbox level, as results.json of a run has it (mode, enforced, ...) [{}]
    rubric             {"name", "version", "path" (its file name), "max_score"} [{}]
    score*, max_score* the total: the sum of the items' points, bounded by `cap`
    cap                the rubric's cap that bounded the total: {at_most, why, rules, broken_in, lost} [null]
    items*             one entry per rubric item (a behaviour) and scenario set:
        item, title        the item's id and the behaviour as a student reads it
        rules, contract    the rules that enforce it and the contract clauses it stands for
        partial            none (lost whole when broken) | share (the share of scenarios it held in)
        set                visible | hidden | after_due_date: when a student may see it
        points, max_points its points in this set
        held_in, scenarios how many of its scenarios in the set it held in, of how many
        broken_in          the scenarios that showed it broken [[]]
        failures           per such scenario: {incident (the incident's id), why (one line per verdict)} [[]]
    incidents          one per scenario that did not hold: {id, scenario, set, outcome, rules, text
                       (the incident report, with its timeline)} [[]]
    review             "<scenario>: <rule>" for each rule the harness could not judge (its checker
                       raised): it costs nothing, and the grade wants an instructor's look [[]]
    scenarios*         one entry per scenario: name, set, outcome (passed | failed | error | skipped
                       | not-run), seconds, verdicts [{rule, label, summary, clause, unknown (only
                       when true: the rule was not judged)}]
    notes              observations that are not verdicts; "<scenario>: <note>" when a scenario
                       made them [[]]
    folder             the folder under <out>/submissions/ holding it and its own page, report.html [null]
    harness            {"version"}: the relaychaos that graded [{}]
    graded_at          when, "YYYY-mm-dd HH:MM UTC" [null]
    stateful           the Hypothesis state machine (the scenario named "stateful"): {ran, shrunk,
                       examples, shrink_s, slowest_example_s, why_not}; its timings are the
                       grader's, never shown to the student [{}]
"""

from __future__ import annotations

import json
from pathlib import Path

from .fieldcheck import BOOL, INTEGER, LIST, NUMBER, OBJECT, STRING, STRINGS, check, one_of, optional

SETS = ("visible", "hidden", "after_due_date")
OUTCOMES = ("passed", "failed", "error", "skipped", "not-run", "not exercised")
MACHINE = "stateful"  # the scenario name of the state machine's run

TOP = {
    "submission": STRING,
    "path": STRING,
    "manifest": optional(STRING),
    "seed": INTEGER,
    "gradable": BOOL,
    "error": optional(STRING),
    "execution_time_s": NUMBER,
    "timed_out": BOOL,
    "sandbox": OBJECT,
    "rubric": OBJECT,
    "score": NUMBER,
    "max_score": NUMBER,
    "items": LIST,
    "cap": optional(OBJECT),
    "incidents": LIST,
    "review": optional(STRINGS),  # "scenario: rule" of each rule not judged (its checker failed)
    "scenarios": LIST,
    "notes": STRINGS,
    "stateful": OBJECT,
    "folder": optional(STRING),
    "harness": OBJECT,
    "graded_at": optional(STRING),
}
ITEM = {
    "item": STRING,
    "title": STRING,
    "rules": STRINGS,
    "contract": STRINGS,
    "partial": one_of("none", "share"),
    "set": one_of(*SETS),
    "points": NUMBER,
    "max_points": NUMBER,
    "held_in": INTEGER,
    "scenarios": INTEGER,
    "broken_in": STRINGS,
    "failures": LIST,
}
INCIDENT = {
    "id": STRING,
    "scenario": STRING,
    "set": one_of(*SETS),
    "outcome": one_of(*OUTCOMES),
    "rules": STRINGS,
    "text": STRING,
}
SCENARIO = {"name": STRING, "set": one_of(*SETS), "outcome": one_of(*OUTCOMES), "seconds": NUMBER, "verdicts": LIST}
STATEFUL = {
    "ran": BOOL,
    "shrunk": BOOL,
    "examples": optional(INTEGER),
    "shrink_s": optional(NUMBER),
    "slowest_example_s": optional(NUMBER),
    "why_not": optional(STRING),
}
EPSILON = 1e-6


def load(path: Path) -> dict:
    """The record at `path`; ValueError naming the file when it is not JSON or not an object."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a grade record: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a grade record: a JSON {type(data).__name__}, not an object")
    return data


def validate(record) -> list[str]:
    """Every problem of a record, as sentences; [] when the writers can use it."""
    problems = check(
        record,
        "record",
        TOP,
        required=("submission", "path", "seed", "gradable", "score", "max_score", "items", "scenarios"),
    )
    if not isinstance(record, dict):
        return problems
    if record.get("gradable") is False and not record.get("error"):
        problems.append("record: not gradable, but no `error` says why")
    for i, item in enumerate(record.get("items") or []):
        problems += _item_problems(item, f"items[{i}]")
    for i, incident in enumerate(record.get("incidents") or []):
        problems += check(incident, f"incidents[{i}]", INCIDENT, required=("id", "scenario", "set", "text"))
    for i, sc in enumerate(record.get("scenarios") or []):
        problems += check(sc, f"scenarios[{i}]", SCENARIO, required=("name", "set", "outcome"))
    if isinstance(record.get("stateful"), dict):
        problems += check(record["stateful"], "stateful", STATEFUL)
    return problems or _total_problems(record)


def _item_problems(item, where: str) -> list[str]:
    problems = check(
        item, where, ITEM, required=("item", "title", "set", "points", "max_points", "held_in", "scenarios")
    )
    if problems:
        return problems
    if not -EPSILON <= item["points"] <= item["max_points"] + EPSILON:
        problems.append(f"{where}: points {item['points']} outside [0, max_points {item['max_points']}]")
    if not 0 <= item["held_in"] <= item["scenarios"]:
        problems.append(f"{where}: held_in {item['held_in']} outside [0, scenarios {item['scenarios']}]")
    return problems


def _total_problems(record: dict) -> list[str]:
    """The total agrees with its items (to a rounding of each item's points to 2 decimals), and its cap."""
    items = record["items"]
    slack = 0.01 + 0.005 * len(items)
    problems = []
    if items and abs(sum(i["max_points"] for i in items) - record["max_score"]) > slack:
        problems.append(f"record: max_score {record['max_score']} is not the sum of the items' max_points")
    total = sum(i["points"] for i in items)
    if record.get("cap"):
        total = min(total, record["cap"].get("at_most", total))
    if record["gradable"] and items and abs(total - record["score"]) > slack:
        problems.append(f"record: score {record['score']} is not the sum of the items' points (within its cap)")
    if not -EPSILON <= record["score"] <= record["max_score"] + EPSILON:
        problems.append(f"record: score {record['score']} outside [0, max_score {record['max_score']}]")
    return problems


def item_points(record: dict) -> dict[str, tuple[float, float]]:
    """Per item, its points and max_points summed across scenario sets, in the record's order."""
    out: dict[str, tuple[float, float]] = {}
    for i in record.get("items", []):
        points, max_points = out.get(i["item"], (0.0, 0.0))
        out[i["item"]] = (points + i["points"], max_points + i["max_points"])
    return out


def incidents_by_id(record: dict) -> dict[str, dict]:
    return {i["id"]: i for i in record.get("incidents", [])}


def incidents(record: dict, item: dict) -> list[dict]:
    """The incidents that cost an item entry, each once, in the order it lists them."""
    by_id = incidents_by_id(record)
    return [by_id[f["incident"]] for f in item.get("failures", []) if f.get("incident") in by_id]
