"""results.json for a PrairieLearn external grader, made from one grade record (reports.grade_record).

    data = results(record)                 # a PrairieLearnResults (relaychaos.records.platforms)
    write(record, "/grade/results/results.json")

The format is PrairieLearn's "External Grading" page, section "Grading results"
(prairielearn.readthedocs.io/en/latest/externalGrading/): `score` in [0, 1], `gradable`,
`format_errors`, `message`, `output`, and `tests` with name, description, points,
max_points, message, output, as `<pl-external-grader-results>` renders them; at most 1 MB.
One test per item of the rubric (a behaviour) and scenario set; the results' output holds
each incident report once, and a test names the incidents that cost it.
A submission that could not be run is `gradable: false` with the reason (PrairieLearn then
awards nothing and does not count the attempt). PrairieLearn shows every test to the student
and has no "after the due date", so the tests of hidden and after-due-date scenarios keep their
points but not their details, unless `reveal_hidden`. The format's JSON Schema, made from the
typed record, is docs/schemas/prairielearn-results.schema.json.
"""

from __future__ import annotations

from pathlib import Path

from relaychaos.atomic import write_text
from relaychaos.records.base import UNSET
from relaychaos.records.grade import GradeRecord, ItemEntry
from relaychaos.records.platforms import PrairieLearnResults, PrairieLearnTest

from . import grade_summary, gradescope
from .grade_record import SETS


def results(record: GradeRecord, *, reveal_hidden: bool = False) -> PrairieLearnResults:
    """The results.json of one submission: a score in [0, 1] and one test per item entry, or not gradable."""
    shown = SETS if reveal_hidden else ("visible",)
    head = grade_summary.headline(record, shown)
    facts = grade_summary.facts(record, shown)
    if not record.gradable:
        tail = grade_summary.output_tail(record)
        return PrairieLearnResults(
            gradable=False,
            format_errors=[grade_summary.reason(record)],
            message=head,
            output="\n".join([head, *facts] + (["", "What the relay printed last:", tail] if tail else [])),
        )
    max_score = float(record.max_score)
    score = min(1.0, max(0.0, float(record.score) / max_score)) if max_score > 0 else 0.0
    partial = [f for f in facts if f.startswith(("The time budget ran out", "Score capped"))]
    incidents = [
        f"Incident: scenario {i.scenario}\n{gradescope.cut(i.text)}" for i in record.incidents if i.set in shown
    ]
    return PrairieLearnResults(
        gradable=True,
        score=round(score, 6),
        message=" ".join([head, *partial]),
        output="\n\n".join(["\n".join([head, *facts]), *incidents]),
        tests=[test(record, item, item.set in shown) for item in record.items if item.not_checked is UNSET],
    )


def test(record: GradeRecord, item: ItemEntry, detailed: bool) -> PrairieLearnTest:
    """One item of the rubric over one scenario set; without details, its points alone. The incident reports
    are in the results' output, once each; a test names them and says in one line per verdict what broke."""
    n = grade_summary.num
    label = "" if item.set == "visible" else f" ({grade_summary.SET_LABEL[item.set]})"
    name, description = f"{item.title}{label}", "checked by " + ", ".join(item.rules)
    points, max_points = round(float(item.points), 2), round(float(item.max_points), 2)
    if not detailed:
        message, output = "Details of these scenarios are not shown.", ""
    else:
        message = (
            f"Held in {item.held_in} of {item.scenarios} scenario(s): {n(item.points)} / {n(item.max_points)} points."
        )
        if item.broken_in:
            message += " Broken in: " + ", ".join(item.broken_in) + " (incident reports in the output above)."
        output = "\n".join(f"{f.incident}: {why}" for f in item.failures for why in f.why)
    return PrairieLearnTest(
        name=name, description=description, points=points, max_points=max_points, message=message, output=output
    )


def write(record: GradeRecord, path: Path) -> Path:
    """Write results(record) to `path` atomically (its folder created: PrairieLearn does not make /grade/results)."""
    return write_text(Path(path), results(record).to_json(ensure_ascii=False) + "\n")
