"""A class graded: every submission in turn, its outputs written as soon as it is graded.

    GRADEBOOK/submissions/<slug>/grade.json        the record (relaychaos.reports.grade_record)
    GRADEBOOK/submissions/<slug>/results.json      Gradescope's format
    GRADEBOOK/submissions/<slug>/prairielearn.json PrairieLearn's format
    GRADEBOOK/submissions/<slug>/report.html       the student's own page (reports.student_page)
    GRADEBOOK/gradebook.csv, gradebook.html        the class, rewritten after each submission

A submission that cannot start, crashes or hangs is a graded outcome; the batch goes
on. On Ctrl-C the submission being graded is stopped (nothing left running) and the
gradebook holds every submission graded so far: valid, and partial.
"""

from __future__ import annotations

from pathlib import Path

from relaychaos.atomic import write_text
from relaychaos.grading.progress import Progress
from relaychaos.grading.run_one import Options, expected, grade
from relaychaos.grading.submissions import Submission
from relaychaos.records.grade import GradeRecord
from relaychaos.reports import gradebook, gradescope, prairielearn, student_page


def write_outputs(record: GradeRecord, folder: Path) -> None:
    """The record's Gradescope and PrairieLearn files and the student's page beside it."""
    gradescope.write(record, folder / "results.json")
    prairielearn.write(record, folder / "prairielearn.json")
    write_text(folder / "report.html", student_page.html(record))


def write_gradebook(records: list[GradeRecord], out: Path) -> None:
    gradebook.write(records, out)


def grade_all(subs: list[Submission], out: Path, opts: Options, progress: Progress | None = None) -> list[GradeRecord]:
    """Grade every submission into out/; the records, in order. KeyboardInterrupt propagates after the
    gradebook has been written for what was graded."""
    progress = progress or Progress(len(subs))
    out.mkdir(parents=True, exist_ok=True)
    records: list[GradeRecord] = []
    n_expected = len(expected(opts))
    try:
        for i, sub in enumerate(subs, 1):
            folder = out / "submissions" / sub.slug

            def report(state: dict, i: int = i, sub: Submission = sub) -> None:
                progress.update(i, sub.name, n_expected, state)

            record = grade(sub, folder, opts, report)
            write_outputs(record, folder)
            records.append(record)
            progress.finish(i, record)
            write_gradebook(records, out)
    finally:
        write_gradebook(records, out)
    return records
