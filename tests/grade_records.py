"""Grade records made on the spot by the grading run's own scorer (relaychaos.grading.score), for the writers' tests.

    record("alice smith")                       # full marks: every item held in every scenario
    record("bob", broken={"one-account-call": ["race-32-one-relay"]})   # that scenario breaks that rule
    ungradable("carol", "could not start: no relay.toml in the submission's folder")

The rubric is small and fixed (RUBRIC): an item lost whole, one kept by share, a catch-all,
a cap; scenarios in every visibility set (SCENARIOS).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

from relaychaos.grading import outcomes
from relaychaos.grading.rubric import Cap, Item, Rubric
from relaychaos.grading.run_one import CUT
from relaychaos.grading.score import Outcome, Score
from relaychaos.records.grade import GradeRecord, HarnessInfo, Stateful, Verdict

RUBRIC = Rubric(
    Path("test-rubric.toml"),
    "test",
    (
        Item(
            "claim",
            "claims a GUID atomically: copies racing never both send it",
            30.0,
            ("one-account-call", "one-debit"),
            ("race-*",),
        ),
        Item("sends-once", "never sends a GUID twice in any other story", 20.0, ("one-account-call", "one-debit")),
        Item("answer-codes", "answers with the contract's codes", 20.0, ("answer-codes",), partial="share"),
        Item(
            "settled",
            "keeps its ledger settled: every row DONE or FAILED in the end",
            30.0,
            ("converged", "serve-ready"),
        ),
    ),
    (Cap(("one-debit",), 80.0, "the relay applied a debit twice"),),
)
SCENARIOS = [
    ("race-32-one-relay", "visible"),
    ("happy-path", "visible"),
    ("guid-reused", "visible"),
    ("min-age-trap", "hidden"),
    ("stateful", "hidden"),
    ("kill-before-account-call", "after_due_date"),
]
SANDBOX = {
    "mode": "auto",
    "enforced": True,
    "layers": {"uid": "a system user per slot", "rlimits": "data 2048 MiB", "landlock": "ABI 7 (filesystem, tcp-bind)"},
    "missing": {},
}


def incident(rules: list[str], scenario: str) -> str:
    """An incident report as the suite writes one, GUIDs as labels."""
    parts = [f"scenario {scenario} against relay 'x': {len(rules)} violation(s) of {len(rules)} rule(s)"]
    for rule in rules:
        parts.append(
            f"[{rule}] GUID g1\n  rule: {rule}\n  what happened: the account system received 2 calls for "
            f"this GUID\n  timeline (seconds since the scenario started):\n"
            f"  +  0.169s  channel sends 10 alice→bob, attempt 1\n"
            f"  +  0.172s  acct#1  account system receives the transfer"
        )
    return "\n\n".join(parts)


def record(
    name: str,
    *,
    broken: dict[str, list[str]] | None = None,
    seed: int = 12345,
    timed_out: bool = False,
    notes: list[str] | None = None,
    root: str = "/class",
) -> GradeRecord:
    """A gradable record: each rule in `broken` breaks in those scenarios; `timed_out`: cut at its budget before the
    last scenario, so not graded (as relaychaos.grading.run_one makes it)."""
    broken = broken or {}
    outs = []
    for scenario, set_ in SCENARIOS:
        rules = [r for r, where in broken.items() if scenario in where]
        verdicts = [
            Verdict(rule=r, label="g1", summary="the account system received this GUID more than once", clause=None)
            for r in rules
        ]
        outs.append(
            Outcome(
                scenario,
                set_,
                "failed" if rules else "passed",
                verdicts,
                incident(rules, scenario) if rules else None,
                1.5,
            )
        )
    if timed_out:
        outs[-1] = Outcome(outs[-1].name, outs[-1].set, "not-run", cut=True)
    sub = SimpleNamespace(name=name, folder=Path(f"{root}/{name}"), manifest=Path(f"{root}/{name}/relay.toml"))
    cut = (
        {
            "gradable": False,
            "error": f"{CUT}: the grading budget of 120 s ended after {len(outs) - 1} of "
            f"{len(outs)} scenarios (a grade cut short is not scored: the instructor "
            "regrades it with a larger --budget-s)",
        }
        if timed_out
        else {}
    )
    shrunk = "stateful" in {s for w in broken.values() for s in w}
    return outcomes.record(
        sub,
        RUBRIC,
        seed,
        *outcomes.scored(outs, RUBRIC),
        **cut,
        execution_time_s=18.2,
        timed_out=timed_out,
        sandbox=json.loads(json.dumps(SANDBOX)),
        notes=list(notes or []),
        stateful=Stateful(ran=True, shrunk=shrunk, why_not=None),
        graded_at="2026-12-01 10:00 UTC",
        harness=HarnessInfo(version="0.1.0"),
        folder=_folder(name),
    )


def scored(result: Score, outcomes: Sequence[Outcome] = ()) -> GradeRecord:
    """The gradable record of a score (relaychaos.grading.score.score's result) and the outcomes it was given."""
    return GradeRecord(
        submission="s",
        path="/s",
        seed=0,
        gradable=True,
        max_score=100.0,
        score=result.score,
        items=result.items,
        review=result.review,
        scenarios=[o.to_run() for o in outcomes],
    )


def _folder(name: str) -> str:
    """The record's folder under submissions/, unique per name, as relaychaos grade names one."""
    return f"{name.encode().hex()[:12]}-{int(hashlib.sha256(name.encode()).hexdigest()[:7], 16):08d}"


def ungradable(name: str, error: str, *, seed: int = 12345) -> GradeRecord:
    sub = SimpleNamespace(name=name, folder=Path(f"/class/{name}"), manifest=None)
    return outcomes.record(
        sub,
        RUBRIC,
        seed,
        outcomes.zero(RUBRIC),
        [],
        gradable=False,
        error=error,
        execution_time_s=0.4,
        sandbox=json.loads(json.dumps(SANDBOX)),
        graded_at="2026-12-01 10:00 UTC",
        harness=HarnessInfo(version="0.1.0"),
        folder=_folder(name),
    )


def class_of_records() -> list[GradeRecord]:
    """Every kind the writers must handle: full marks, partial, capped, ungradable, timed out, awkward names."""
    return [
        record("alice smith"),
        record(
            "bob",
            broken={
                "one-account-call": ["race-32-one-relay", "min-age-trap"],
                "converged": ["kill-before-account-call"],
            },
        ),
        ungradable(
            "carol",
            "could not start: relay 'carol' serve exited with status 1 before answering "
            "http://RELAY_HOST:RELAY_PORT/health; the last lines it printed are below\n"
            '  File "relay.py", line 2\n    def main(:\nSyntaxError: invalid syntax',
        ),
        record(
            "dörte",
            timed_out=True,
            broken={"answer-codes": ["happy-path"]},
            notes=["race-32-one-relay: its accept queue overflowed", "min-age-trap: a hidden note"],
        ),
        record('eve "the <script>" o\'neil, jr.', broken={"one-account-call": ["stateful"]}),
        record('=HYPERLINK("x")'),
        record("名前 `tick`", broken={"answer-codes": ["happy-path"], "one-debit": ["happy-path"]}),
    ]


def write_shard(folder: Path, records: list[GradeRecord]) -> Path:
    """A shard's output folder as relaychaos grade lays it out: <folder>/submissions/<safe-name>/grade.json."""
    for r in records:
        target = folder / "submissions" / str(r.folder)
        target.mkdir(parents=True, exist_ok=True)
        (target / "grade.json").write_text(r.to_json(ensure_ascii=False), encoding="utf-8")
    return folder
