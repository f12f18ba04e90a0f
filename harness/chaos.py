"""Run a scenario, keep its history, check it: the one entry point the suite, the CLI and Hypothesis share."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import checkers
from .history import History
from .runner import run_scenario
from .stack import Stack
from .steps import Scenario
from .verdict import Verdict


class ChaosFailure(AssertionError):
    """A scenario broke one or more rules; the message is the incident report."""


@dataclass
class ChaosResult:
    """A finished run: its history (saved as JSON lines), the verdicts, and the report text."""

    scenario: Scenario
    history: History
    verdicts: list[Verdict]
    history_path: Path
    relay: str
    notes: list[str] = field(default_factory=list)  # what was noticed that is not a verdict

    @property
    def ok(self) -> bool:
        return not self.verdicts

    def report(self, limit: int = 5) -> str:
        text = checkers.report(self.history, self.verdicts, limit)
        if self.notes:
            text += "\n\nnotes (not verdicts):\n" + "\n".join(f"  - {n}" for n in self.notes)
        return f"{text}\n\nhistory: {self.history_path}" if self.verdicts else text

    def assert_holds(self) -> None:
        if self.verdicts:
            raise ChaosFailure(self.report())


def run_and_check(stack: Stack, scenario: Scenario, tag: str | None = None) -> ChaosResult:
    """Run scenario on a fresh stack, save the history in the stack's folder, and check it."""
    history = run_scenario(stack, scenario, tag)
    path = stack.workdir / "history.jsonl"
    history.save(path)
    return ChaosResult(scenario, history, checkers.check(history), path, stack.manifest.name,
                       checkers.notes(history))


def recheck(path: Path) -> list[Verdict]:
    """Check a saved history again (after a checker changed, say)."""
    return checkers.check(History.load(path))
