"""results.json for Gradescope's autograder, made from one grade record (reports.grade_record).

    data = results(record)                 # a dict in Gradescope's format
    write(record, "/autograder/results/results.json")
    problems = validate(data)              # [] when Gradescope reads it as meant

The format is Gradescope's "Autograder Specifications" (gradescope-autograders.readthedocs.io/
en/latest/specs/: Output format, test case visibility, test case status, output string
formatting; leaderboards/). One test per rule entry of the record, its visibility that of the
entry's scenario set; every output is Markdown ("md") with each incident report fenced as code.
Gradescope hides a student's total while some tests are hidden from them, so the top-level
output gives only the visible part of the score and leaves out notes of hidden scenarios, and
the leaderboard (seen by the whole class) ranks by the visible points alone.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import grade_summary
from .atomic import write_text
from .fieldcheck import (INTEGER, LIST, NUMBER, OBJECT, STRING, STRINGS, as_json_problems, check, either,
                         one_of)
from .grade_record import incidents

VISIBILITY = ("hidden", "after_due_date", "after_published", "visible")
FORMATS = ("text", "html", "simple_format", "md", "ansi")
MAX_INCIDENTS = 3  # per test: the first few tell the story; results.json stays small
MAX_INCIDENT_CHARS = 6000
MD_SPECIAL = set("\\`*_{}[]<>#|~!&")


def results(record: dict, *, leaderboard: bool = True) -> dict:
    """The results.json of one submission: score, summary, one test per rule entry, a leaderboard."""
    gradable = record.get("gradable", True)
    data = {"score": round(float(record["score"]), 4) if gradable else 0.0,
            "execution_time": int(round(record.get("execution_time_s") or 0)),
            "output": summary(record), "output_format": "md",
            "visibility": "visible", "stdout_visibility": "hidden",
            "tests": [test(record, rule) for rule in record.get("rules", [])]}
    if leaderboard:
        visible = sum(r["points"] for r in record.get("rules", []) if r["set"] == "visible") if gradable else 0
        data["leaderboard"] = [{"name": "points on visible scenarios", "value": round(visible, 4), "order": "desc"}]
    return data


def summary(record: dict) -> str:
    """The top-level output: the score (or why none) in bold, then one bullet per fact."""
    shown = ("visible",)
    head = f"**{md(grade_summary.headline(record, shown))}**"
    return "\n".join([f"Submission {code(record['submission'])}", "", head, ""]
                     + [f"- {md(line)}" for line in grade_summary.facts(record, shown)])


def test(record: dict, rule: dict) -> dict:
    """One rule of the rubric over one scenario set, as a Gradescope test."""
    gradable = record.get("gradable", True)
    full = gradable and not rule.get("broken_in") and rule["points"] >= rule["max_points"] - 1e-9
    return {"name": f"{rule['rule']}: {rule['what']} ({grade_summary.SET_LABEL[rule['set']]})",
            "score": round(float(rule["points"]), 4) if gradable else 0.0,
            "max_score": round(float(rule["max_points"]), 4),
            "status": "passed" if full else "failed",
            "output": test_output(record, rule), "output_format": "md",
            "visibility": rule["set"],
            "tags": [t for t in (rule.get("group"), rule["rule"]) if t],
            "extra_data": {"held_in": rule["held_in"], "scenarios": rule["scenarios"],
                           "broken_in": list(rule.get("broken_in", []))}}


def test_output(record: dict, rule: dict) -> str:
    """Markdown: where the rule held and broke, and each failure's incident report fenced as code."""
    if not record.get("gradable", True):
        return md(grade_summary.headline(record))
    n = grade_summary.num
    lines = [f"Held in {rule['held_in']} of {rule['scenarios']} scenario(s): {n(rule['points'])} / "
             f"{n(rule['max_points'])} points."]
    if rule.get("broken_in"):
        lines.append("Broken in: " + ", ".join(code(s) for s in rule["broken_in"]) + ".")
    reports = incidents(record, rule)
    for text in reports[:MAX_INCIDENTS]:
        lines += ["", fenced(text[:MAX_INCIDENT_CHARS] + ("\n..." if len(text) > MAX_INCIDENT_CHARS else ""))]
    if len(reports) > MAX_INCIDENTS:
        lines += ["", f"... and {len(reports) - MAX_INCIDENTS} more incident report(s) like these."]
    return "\n".join(lines)


def md(text: str) -> str:
    """Plain text made literal in Markdown: special characters escaped, line breaks kept as spaces."""
    return "".join("\\" + c if c in MD_SPECIAL else c for c in " ".join(str(text).split()))


def code(text: str) -> str:
    """A code span holding `text` on one line, backticks and all (CommonMark: a longer run of backticks
    delimits it, and a space pads a text that starts or ends with one)."""
    text = " ".join(str(text).split())
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fenced(text: str) -> str:
    """A fenced code block holding `text` as it is: the fence is longer than any backtick run inside it."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for c in text:
        run = run + 1 if c == "`" else 0
        longest = max(longest, run)
    return longest


def write(record: dict, path: Path) -> Path:
    """Write results(record) to `path` atomically: Gradescope never reads half a file."""
    return write_text(Path(path), json.dumps(results(record), indent=2, ensure_ascii=False) + "\n")


TOP = {"score": NUMBER, "execution_time": (lambda v: INTEGER[0](v) and v >= 0, "a whole number of seconds"),
       "output": STRING, "output_format": one_of(*FORMATS), "test_output_format": one_of(*FORMATS),
       "test_name_format": one_of(*FORMATS), "visibility": one_of(*VISIBILITY),
       "stdout_visibility": one_of(*VISIBILITY), "extra_data": OBJECT, "tests": LIST, "leaderboard": LIST}
TEST = {"score": NUMBER, "max_score": NUMBER, "status": one_of("passed", "failed"), "name": STRING,
        "name_format": one_of(*FORMATS), "number": STRING, "output": STRING, "output_format": one_of(*FORMATS),
        "tags": STRINGS, "visibility": one_of(*VISIBILITY), "extra_data": OBJECT}
BOARD = {"name": STRING, "value": either(NUMBER, STRING), "order": one_of("asc", "desc")}


def validate(data) -> list[str]:
    """Every way `data` strays from Gradescope's results.json spec; [] when it is well formed."""
    problems = check(data, "results", TOP, closed=True)
    if not isinstance(data, dict):
        return problems
    problems += as_json_problems(data)
    tests = data.get("tests") if isinstance(data.get("tests"), list) else []
    if "score" not in data and not tests:
        problems.append("results: no top-level score and no tests (one of them is required)")
    for i, t in enumerate(tests):
        problems += check(t, f"tests[{i}]", TEST, closed=True)
        if isinstance(t, dict) and "score" not in data and "score" not in t and "status" not in t:
            problems.append(f"tests[{i}]: no score (nor status), and no top-level score either")
    for i, entry in enumerate(data.get("leaderboard") if isinstance(data.get("leaderboard"), list) else []):
        problems += check(entry, f"leaderboard[{i}]", BOARD, required=("name", "value"), closed=True)
    return problems
