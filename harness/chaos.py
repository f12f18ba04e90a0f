"""Run a scenario, keep its history, check it: the one entry point the suite, the CLI and Hypothesis share.

This is the API layer over the parts: the engine runs, the checkers judge, the
reports render. Histories are saved (relaychaos.history.save) beside the run's logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from relaychaos import checkers
from relaychaos.checkers.verdict import Verdict
from relaychaos.engine.runner import run_scenario
from relaychaos.engine.steps import Scenario
from relaychaos.history import History, HistoryFile, save
from relaychaos.reports.incident import report
from relaychaos.stack.world import Stack


class ChaosFailure(AssertionError):
    """A scenario broke one or more rules; the message is the incident report."""


@dataclass
class ChaosResult:
    """A finished run: its history (saved as JSON lines), the verdicts, and the report text."""

    scenario: Scenario
    history: History
    verdicts: list[Verdict]
    history_path: Path
    notes: list[str] = field(default_factory=list)  # what was noticed that is not a verdict

    @property
    def ok(self) -> bool:
        return not self.verdicts

    def report(self, limit: int = 5) -> str:
        text = report(self.history, self.verdicts, limit)
        if self.notes:
            text += "\n\nnotes (not verdicts):\n" + "\n".join(f"  - {n}" for n in self.notes)
        return f"{text}\n\nhistory: {self.history_path}" if self.verdicts else text

    def assert_holds(self) -> None:
        if self.verdicts:
            raise ChaosFailure(self.report())


def run_and_check(stack: Stack, scenario: Scenario, tag: str | None = None) -> ChaosResult:
    """Run scenario on a fresh stack, save the history in the stack's folder, and check it."""
    history = run_scenario(stack, scenario, tag)
    path = save(history, stack.workdir / "history.jsonl")
    return ChaosResult(scenario, history, checkers.check(history), path, checkers.notes(history))


def check_path(path: Path) -> list[Verdict]:
    """Check a saved history file (`.jsonl` or `.jsonl.gz`, e.g. a StreamedHistory's), by the tolerances it
    recorded: read in one pass, event by event, never held in memory whole."""
    return checkers.check(HistoryFile(path))
