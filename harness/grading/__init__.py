"""Grading a class of relays: a rubric, one graded record per submission, and the gradebook.

`relaychaos grade` (relaychaos.commands.cli) runs each submission through `run_one`, scores it
with `score` against a `rubric`, and writes the record and the formats graders read
(relaychaos.reports.gradescope, .prairielearn, .gradebook).
"""
