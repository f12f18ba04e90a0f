"""grade.json: the record of one graded submission, the single source every grading output is made from.

    record = GradeRecord.from_json(text)   # ValueError naming the field when it is not a record
    record.problems()                      # [] when its total agrees with its items (and its cap)
    path.write_text(record.to_json())      # as `relaychaos grade` writes it (indent 2, UTF-8)

relaychaos.grading writes one per submission; reports.gradescope, reports.prairielearn,
reports.gradebook and reports.student_page read nothing else. Every text in it is as a student
reads it (reports.student_text). The fields are described in relaychaos.reports.grade_record and
docs/grading.md; published as docs/schemas/grade.schema.json (relaychaos.records.schemas).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .base import UNSET, Record, UnsetType

Set = Literal["visible", "hidden", "after_due_date"]
SETS: tuple[Set, ...] = ("visible", "hidden", "after_due_date")
ScenarioOutcome = Literal["passed", "failed", "error", "skipped", "not-run", "not exercised"]
EPSILON = 1e-6


class RubricInfo(Record, kw_only=True):
    """The rubric that graded: its name, version, file name and total."""

    name: str
    version: int = 1
    path: str = ""
    max_score: float = 0.0


class Failure(Record, kw_only=True):
    """Why one scenario cost an item: the incident's id and one line per verdict."""

    incident: str
    why: list[str] = []


class ItemEntry(Record, kw_only=True):
    """One rubric item (a behaviour) over one scenario set."""

    item: str
    title: str
    rules: list[str] = []  # the rules that enforce it
    contract: list[str] = []  # the contract clauses it stands for
    partial: Literal["none", "share"] = "none"  # none: lost whole when broken; share: the share it held in
    set: Set = "visible"
    points: float
    max_points: float
    held_in: int
    scenarios: int
    broken_in: list[str] = []
    failures: list[Failure] = []
    not_checked: str | UnsetType = UNSET  # why nothing could judge it on this relay (its profile): 0 of 0 points


class Cap(Record, kw_only=True):
    """The rubric's cap that bounded the total: some counted scenario broke one of its rules."""

    at_most: float
    why: str
    rules: list[str] = []
    broken_in: list[str] = []
    lost: float | UnsetType = UNSET  # the points it took off the total


class Incident(Record, kw_only=True):
    """One scenario that did not hold: its incident report, with its timeline."""

    id: str
    scenario: str
    set: Set
    outcome: ScenarioOutcome = "failed"
    rules: list[str] = []
    text: str


class Verdict(Record, kw_only=True):
    """A verdict as a student reads it: the rule, the GUID's label, one line, the clause."""

    rule: str | None
    label: str | None = None
    summary: str | None = None
    clause: str | None = None
    unknown: bool | UnsetType = UNSET  # true when the rule was not judged (its checker raised)


class ScenarioRun(Record, kw_only=True):
    """One scenario of the grade: its set, outcome, time and verdicts."""

    name: str
    set: Set
    outcome: ScenarioOutcome
    seconds: float = 0.0
    verdicts: list[Verdict] = []
    cut: bool | UnsetType = UNSET  # not run because the wall budget ran out


class Stateful(Record, kw_only=True):
    """The state machine's run (the scenario named "stateful"): its timings are the grader's, never shown."""

    ran: bool = False
    shrunk: bool = False
    examples: int | None | UnsetType = UNSET
    shrink_s: float | None | UnsetType = UNSET
    slowest_example_s: float | None | UnsetType = UNSET
    examples_after_failure: int | None | UnsetType = UNSET  # real runs of shrinking candidates
    why_not: str | None = None


class HarnessInfo(Record, kw_only=True):
    version: str = "unknown"


class GradeRecord(Record, kw_only=True):
    """grade.json: one graded submission, every output's single source."""

    submission: str  # display name: the submission's folder name
    path: str  # its folder, absolute: its identity across shards (never shown)
    manifest: str | None = None
    seed: int
    gradable: bool
    error: str | None = None  # why not gradable, in words a student can act on
    timed_out: bool = False
    sandbox: dict[str, Any] = {}  # the sandbox level, as relaychaos.sandbox.levels records it
    rubric: RubricInfo | None = None
    max_score: float
    notes: list[str] = []
    cap: Cap | None = None
    incidents: list[Incident] = []
    stateful: Stateful = msgspec.field(default_factory=Stateful)
    harness: HarnessInfo = msgspec.field(default_factory=HarnessInfo)
    graded_at: str | None = None  # "YYYY-mm-dd HH:MM UTC"
    folder: str | None | UnsetType = UNSET  # its folder under <out>/submissions/ (with report.html)
    score: float
    items: list[ItemEntry]
    review: list[str] = []  # "<scenario>: <rule>" not judged, or not exercised: an instructor looks
    scenarios: list[ScenarioRun]
    execution_time_s: float = 0.0
    harness_failed: bool | UnsetType = UNSET  # the grader itself failed: nothing the relay did is known

    def item_points(self) -> dict[str, tuple[float, float]]:
        """Per item, its points and max_points summed across scenario sets, in the record's order."""
        out: dict[str, tuple[float, float]] = {}
        for i in self.items:
            points, max_points = out.get(i.item, (0.0, 0.0))
            out[i.item] = (points + i.points, max_points + i.max_points)
        return out

    def incidents_by_id(self) -> dict[str, Incident]:
        return {i.id: i for i in self.incidents}

    def incidents_of(self, item: ItemEntry) -> list[Incident]:
        """The incidents that cost an item entry, each once, in the order it lists them."""
        by_id = self.incidents_by_id()
        return [by_id[f.incident] for f in item.failures if f.incident in by_id]

    def sets_of_scenarios(self) -> dict[str, str]:
        """Scenario name -> its set."""
        return {s.name: s.set for s in self.scenarios}

    def problems(self) -> list[str]:
        """What a well-typed record can still get wrong: a reason missing, points out of range, a total that is
        not its items' (to a rounding of each item's points to 2 decimals) within its cap."""
        problems = [] if self.gradable or self.error else ["record: not gradable, but no `error` says why"]
        for n, i in enumerate(self.items):
            if not -EPSILON <= i.points <= i.max_points + EPSILON:
                problems.append(f"items[{n}]: points {i.points} outside [0, max_points {i.max_points}]")
            if not 0 <= i.held_in <= i.scenarios:
                problems.append(f"items[{n}]: held_in {i.held_in} outside [0, scenarios {i.scenarios}]")
        return problems or self._total_problems()

    def _total_problems(self) -> list[str]:
        slack = 0.01 + 0.005 * len(self.items)
        problems = []
        if self.items and abs(sum(i.max_points for i in self.items) - self.max_score) > slack:
            problems.append(f"record: max_score {self.max_score} is not the sum of the items' max_points")
        total = sum(i.points for i in self.items)
        if self.cap is not None:
            total = min(total, self.cap.at_most)
        if self.gradable and self.items and abs(total - self.score) > slack:
            problems.append(f"record: score {self.score} is not the sum of the items' points (within its cap)")
        if not -EPSILON <= self.score <= self.max_score + EPSILON:
            problems.append(f"record: score {self.score} outside [0, max_score {self.max_score}]")
        return problems
