"""grade.json: the record of one graded submission, the single source every grading output is made from.

    record = load(path)          # a GradeRecord (relaychaos.records.grade); ValueError naming the file and field
    problems = validate(data)    # [] when plain JSON values are a record the writers below can use

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
    score*, max_score* the total: the sum of the items' points, bounded by `cap`, out of the sum of their
                       max_points (the rubric's total less the items not checked on the relay)
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
        not_checked        why nothing could judge the item on this relay (its profile; a command it lacks):
                           0 of 0 points, neither held nor lost [absent]
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
                       examples, shrink_s, slowest_example_s, examples_after_failure (real runs
                       while shrinking), why_not}; its timings are the grader's, never shown to
                       the student [{}]
    harness_failed     true when the grader itself failed (only then)

The record is typed (relaychaos.records.grade.GradeRecord: it writes and reads itself) and its
JSON Schema is published as docs/schemas/grade.schema.json.
"""

from __future__ import annotations

from pathlib import Path

from relaychaos.records.base import finite_problems
from relaychaos.records.grade import SETS, GradeRecord

__all__ = ["MACHINE", "SETS", "load", "validate"]
MACHINE = "stateful"  # the scenario name of the state machine's run


def load(path: Path) -> GradeRecord:
    """The record at `path`; ValueError naming the file (and the field) when it is not one."""
    path = Path(path)
    try:
        return GradeRecord.from_json(path.read_bytes(), "a grade record")
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def validate(data: object) -> list[str]:
    """Every problem of plain JSON values as a record, as sentences: not JSON's numbers, not the record's fields
    (the first, naming it as `$.items[0].set`), or a total that disagrees with its items; [] when usable."""
    problems = finite_problems(data)
    if problems:
        return problems
    try:
        record = GradeRecord.from_builtins(data, "a grade record")
    except ValueError as e:
        return [str(e)]
    return record.problems()
