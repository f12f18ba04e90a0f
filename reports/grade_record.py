"""grade.json: the record of one graded submission, the single source every grading output is made from.

    record = load(path)          # a plain dict, as the grading run wrote it
    problems = validate(record)  # [] when the writers below can use it

`relaychaos grade` writes one per submission, as `<out>/submissions/<safe-name>/grade.json`;
reports.gradescope, reports.prairielearn and reports.gradebook read nothing else, and
gradebook.merge joins the records of several shards. The fields (* required; the others
have the defaults in brackets when missing):

    submission*        display name: the submission's folder name (spaces, unicode and all)
    path*              absolute path of the submission's folder: its identity across shards
    manifest           its relay.toml, or null when none was found [null]
    seed*              the seed of every random choice of the run (an integer)
    gradable*          false: the submission could not be run at all (no manifest, will not start)
    error              why not, in words a student can act on [null]; required when not gradable
    execution_time_s   wall time of the grading [0]
    timed_out          the wall budget ran out: the results are partial [false]
    sandbox            the sandbox level, as results.json of a run has it (mode, enforced, ...) [{}]
    rubric             {"name", "max_score"} [{}]
    score*, max_score* the total: the sum of the rules' points and max_points
    rules*             one entry per rubric rule and scenario set:
        rule, what         the rule's id and its sentence ("one-account-call", "at most one ...")
        group              the rubric's group of the rule, e.g. "money" [none]
        set                visible | hidden | after_due_date: when a student may see it
        points, max_points partial credit: max_points × the (weighted) share of scenarios it held in
        held_in, scenarios how many scenarios of the set it held in, of how many
        broken_in          the scenarios it broke in [[]]
        incidents          incident reports (rule, GUID, timeline) of its failures, as text [[]]
    scenarios*         one entry per scenario: name, set, outcome (passed | failed | error | skipped
                       | not-run), seconds, verdicts [{rule, guid, summary, clause}], message (the
                       incident report text, or null)
    notes              observations that are not verdicts; "<scenario>: <note>" when a scenario
                       made them [[]]
    stateful           the Hypothesis state machine (the scenario named "stateful"): {ran, shrunk,
                       why_not} [{}]
"""
from __future__ import annotations

import json
from pathlib import Path

from .fieldcheck import (BOOL, INTEGER, LIST, NUMBER, OBJECT, STRING, STRINGS, check, one_of,
                         optional)

SETS = ("visible", "hidden", "after_due_date")
OUTCOMES = ("passed", "failed", "error", "skipped", "not-run")
MACHINE = "stateful"  # the scenario name of the state machine's run

TOP = {"submission": STRING, "path": STRING, "manifest": optional(STRING), "seed": INTEGER,
       "gradable": BOOL, "error": optional(STRING), "execution_time_s": NUMBER, "timed_out": BOOL,
       "sandbox": OBJECT, "rubric": OBJECT, "score": NUMBER, "max_score": NUMBER, "rules": LIST,
       "scenarios": LIST, "notes": STRINGS, "stateful": OBJECT}
RULE = {"rule": STRING, "group": STRING, "what": STRING, "set": one_of(*SETS), "points": NUMBER,
        "max_points": NUMBER, "held_in": INTEGER, "scenarios": INTEGER, "broken_in": STRINGS,
        "incidents": STRINGS}
SCENARIO = {"name": STRING, "set": one_of(*SETS), "outcome": one_of(*OUTCOMES), "seconds": NUMBER,
            "verdicts": LIST, "message": optional(STRING)}
STATEFUL = {"ran": BOOL, "shrunk": BOOL, "why_not": optional(STRING)}
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
    problems = check(record, "record", TOP, required=("submission", "path", "seed", "gradable", "score",
                                                      "max_score", "rules", "scenarios"))
    if not isinstance(record, dict):
        return problems
    if record.get("gradable") is False and not record.get("error"):
        problems.append("record: not gradable, but no `error` says why")
    for i, rule in enumerate(record.get("rules") or []):
        problems += _rule_problems(rule, f"rules[{i}]")
    for i, sc in enumerate(record.get("scenarios") or []):
        problems += check(sc, f"scenarios[{i}]", SCENARIO, required=("name", "set", "outcome"))
    if isinstance(record.get("stateful"), dict):
        problems += check(record["stateful"], "stateful", STATEFUL)
    return problems or _total_problems(record)


def _rule_problems(rule, where: str) -> list[str]:
    problems = check(rule, where, RULE, required=("rule", "what", "set", "points", "max_points", "held_in",
                                                  "scenarios"))
    if problems:
        return problems
    if not -EPSILON <= rule["points"] <= rule["max_points"] + EPSILON:
        problems.append(f"{where}: points {rule['points']} outside [0, max_points {rule['max_points']}]")
    if not 0 <= rule["held_in"] <= rule["scenarios"]:
        problems.append(f"{where}: held_in {rule['held_in']} outside [0, scenarios {rule['scenarios']}]")
    return problems


def _total_problems(record: dict) -> list[str]:
    """The total agrees with its rules (to a rounding of each rule's points to 2 decimals)."""
    rules = record["rules"]
    slack = 0.01 + 0.005 * len(rules)
    problems = []
    if rules and abs(sum(r["max_points"] for r in rules) - record["max_score"]) > slack:
        problems.append(f"record: max_score {record['max_score']} is not the sum of the rules' max_points")
    if record["gradable"] and rules and abs(sum(r["points"] for r in rules) - record["score"]) > slack:
        problems.append(f"record: score {record['score']} is not the sum of the rules' points")
    if not -EPSILON <= record["score"] <= record["max_score"] + EPSILON:
        problems.append(f"record: score {record['score']} outside [0, max_score {record['max_score']}]")
    return problems


def rule_points(record: dict) -> dict[str, tuple[float, float]]:
    """Per rule, its points and max_points summed across scenario sets, in the record's order."""
    out: dict[str, tuple[float, float]] = {}
    for r in record.get("rules", []):
        points, max_points = out.get(r["rule"], (0.0, 0.0))
        out[r["rule"]] = (points + r["points"], max_points + r["max_points"])
    return out


def incidents(record: dict, rule: dict) -> list[str]:
    """The incident reports of a rule entry: its own, else the messages of the scenarios it broke in."""
    if rule.get("incidents"):
        return list(rule["incidents"])
    by_name = {s["name"]: s for s in record.get("scenarios", []) if s.get("set") == rule.get("set")}
    return [by_name[n]["message"] for n in rule.get("broken_in", []) if by_name.get(n, {}).get("message")]
