"""Run a scenario, keep its history, check it: the one entry point the suite, the CLI and Hypothesis share.

This is the API layer over the parts: the engine runs, the checkers judge, the
reports render. Histories are saved (relaychaos.history.save) beside the run's logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from relaychaos import checkers
from relaychaos.checkers import coverage, landing
from relaychaos.checkers.landing import Landing
from relaychaos.checkers.verdict import Verdict
from relaychaos.engine.runner import run_scenario
from relaychaos.engine.steps import Scenario
from relaychaos.errors import RelayError
from relaychaos.events import Op
from relaychaos.history import History, HistoryFile, save
from relaychaos.reports.incident import report
from relaychaos.reports.results import NOT_EXERCISED
from relaychaos.stack.world import Stack


class ChaosFailure(AssertionError):
    """A scenario broke one or more rules; the message is the incident report."""


class NotApplicable(AssertionError):
    """Every rule held, and every claim of the scenario reads what this relay does not offer (a keyed service's
    own ledger table, a batch command it lacks): nothing of the scenario applies. Reported as a skip whose reason
    starts with NOT_APPLICABLE; it does not change the exit status, as a scenario needing a missing command."""


class NotExercised(AssertionError):
    """Every rule held, but a landing claim of the scenario did not land: its fault met nothing, so the run tested
    nothing (never "passed"). The pytest plugin reports it as a skip whose reason starts with NOT_EXERCISED, and
    the run's exit status is not 0."""


def landing_text(landings: list[Landing]) -> str:
    """Each claim not landed: its status, what it claims and what the history shows."""
    return "\n".join(f"  {x.status}: {x.claim} -- {x.why}" for x in landings if not x.landed)


NOT_APPLICABLE = "not applicable"


@dataclass
class ChaosResult:
    """A finished run: its history (saved as JSON lines), the verdicts, and the report text."""

    scenario: Scenario
    history: History
    verdicts: list[Verdict]
    history_path: Path
    notes: list[str] = field(default_factory=list)  # what was noticed that is not a verdict
    landing: list[Landing] = field(default_factory=list)  # each landing claim's outcome (relaychaos.checkers.landing)
    cells: set[tuple[str, str]] = field(default_factory=set)  # (fault, row state) reached (checkers.coverage)

    @property
    def ok(self) -> bool:
        """Every rule held (whether the scenario was exercised is `exercised`)."""
        return not self.verdicts

    @property
    def exercised(self) -> bool:
        """No landing claim MISSED or UNKNOWN: the scenario's faults met the transfers they were aimed at (a claim
        not applicable to this relay aside)."""
        return not any(x.missed for x in self.landing)

    @property
    def applicable(self) -> bool:
        """Some claim applies to this relay (or the scenario claims nothing)."""
        return not self.landing or any(x.status != landing.NOT_APPLICABLE for x in self.landing)

    @property
    def outcome(self) -> str:
        """failed (a rule broken), not exercised (every rule held, a claim not landed), not applicable (every claim
        reads what the relay does not offer) or passed."""
        if self.verdicts:
            return "failed"
        return NOT_EXERCISED if not self.exercised else "passed" if self.applicable else NOT_APPLICABLE

    def report(self, limit: int = 5) -> str:
        text = report(self.history, self.verdicts, limit)
        if self.notes:
            text += "\n\nnotes (not verdicts):\n" + "\n".join(f"  - {n}" for n in self.notes)
        return f"{text}\n\nhistory: {self.history_path}" if self.verdicts else text

    def assert_holds(self) -> None:
        """ChaosFailure when a rule broke; NotExercised when every rule held but a claim did not land."""
        if self.verdicts:
            raise ChaosFailure(self.report())
        if not self.exercised:
            raise NotExercised(
                f"{NOT_EXERCISED}: scenario {self.scenario.name}: every rule held, but its fault did not meet the "
                f"transfer it aims at, so it tested nothing:\n{landing_text(self.landing)}\n\nhistory: "
                f"{self.history_path}"
            )
        if not self.applicable:
            raise NotApplicable(
                f"{NOT_APPLICABLE}: scenario {self.scenario.name}: every claim reads what the relay does not "
                f"offer:\n{landing_text(self.landing)}"
            )


def run_and_check(stack: Stack, scenario: Scenario, tag: str | None = None) -> ChaosResult:
    """Run scenario on a fresh stack, save the history in the stack's folder, and check it. A scenario that runs a
    batch command the relay does not have is a RelayError before anything starts."""
    missing = sorted(scenario.batch_commands - set(stack.manifest.commands))
    if missing:
        raise RelayError(
            f"scenario {scenario.name} runs {' and '.join(missing)}, which relay '{stack.manifest.name}' does not have",
            where=f"{stack.manifest.path} [commands]",
            fix="run it on a relay with those commands, or a scenario without those steps",
        )
    history = run_scenario(stack, scenario, tag)
    path = save(history, stack.workdir / "history.jsonl")
    verdicts, notes = checkers.check(history), checkers.notes(history)
    return ChaosResult(scenario, history, verdicts, path, notes, landing.judge(history), coverage.cells(history))


def serve_start(history: History) -> tuple[bool | None, str | None]:
    """Whether serve ever answered its health path in the run (None: it was never started) and, when it never
    did, why its first start failed: the failed step's message (what, the fix and the tail of serve's log)."""
    started, why = None, None
    for e in history:
        if e.f == Op.START and e.type == "ok":
            return True, None
        if e.f == Op.START and e.type == "fail":
            started = False
        elif e.f == Op.STEP and e.type == "fail" and started is False and why is None:
            why = str(e.value.get("error") or "")
    return started, why


def check_path(path: Path) -> list[Verdict]:
    """Check a saved history file (`.jsonl` or `.jsonl.gz`, e.g. a StreamedHistory's), by the tolerances it
    recorded: read in one pass, event by event, never held in memory whole."""
    return checkers.check(HistoryFile(path))
