"""What the stateful chaos machine (relaychaos.scenarios.machine) runs against, and what it finds as it runs.

A Context holds one relay's long-lived stack, shared by every example, and gathers over the examples: how many
ran, the failures, the first failing example as found (its verdicts, report and history) and the last one's report
after shrinking, the shrinking's time budget, and how often each step and fault ran.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import event, settings

from relaychaos.engine.shrink_budget import ShrinkBudget
from relaychaos.history import History
from relaychaos.stack.world import Stack


@dataclass
class Context:
    """What the machine runs against: one long-lived stack (relays and proxies reused across examples)."""

    stack: Stack
    found_dir: Path | None = None
    examples: int = 0
    failures: list[str] = field(default_factory=list)
    first_failure_at: tuple[int, float] | None = None  # (example number, seconds into the run)
    first_verdicts: list[dict] = field(default_factory=list)  # of the first failing example, as found
    first_report: str = ""
    last_report: str = ""  # of the last failing example run: after shrinking, the shortest story found
    slowest_example_s: float = 0.0  # shrinking stops at the first example ending past its limit
    first_history: History | None = None  # the first failing example's history, as it was judged
    last_history: History | None = None  # the last example's history (kept when none failed)
    started: float = field(default_factory=time.monotonic)
    last_file: Path | None = None
    counts: collections.Counter = field(default_factory=collections.Counter)  # steps and faults run
    budget: ShrinkBudget = field(default_factory=lambda: ShrinkBudget(None))  # shrinking's time budget
    stop: Callable[[], None] | None = None  # called as each example starts; raises to end the run
    exercised: int = 0  # examples in which some fault met a transfer (relaychaos.checkers.faults_met)
    unexercised: int = 0  # examples that injected faults, none of which met a transfer: they tested nothing

    def note(self, what: str) -> None:
        """Count a step or fault (for the statistics), and tell Hypothesis too."""
        self.counts[what] += 1
        event(what)

    def shrinking(self, settings: settings) -> dict:
        """{shrunk, shrink_s, ...}: whether the first failure was shrunk to the end, and for how long.

        Called once the test is over. `shrink_s` is None when nothing was shrunk (no failure, or no
        shrink phase); `shrunk` is False then, or when the budget cut the shrinking short (the story
        reported is then the shortest found by that time).
        """
        if self.first_failure_at is None or "shrink" not in {p.name for p in settings.phases}:
            return {"shrunk": False, "shrink_s": None}
        spent = time.monotonic() - self.started - self.first_failure_at[1]
        return {
            "shrunk": not self.budget.cut,
            "shrink_s": round(spent, 2),
            "shrink_budget_s": self.budget.limit_s,
            "slowest_example_s": round(self.slowest_example_s, 2),
            "examples_after_failure": self.examples - self.first_failure_at[0],  # run for real while shrinking
            "cut_candidates": self.budget.rejected,
        }

    def statistics(self) -> str:
        """How often each step and fault ran, over every example so far."""
        lines = [
            f"relaychaos state machine: {self.examples} examples in {time.monotonic() - self.started:.1f} s; "
            f"{self.exercised} with a fault that met a transfer, {self.unexercised} whose faults all met nothing"
        ]
        lines += [f"  {n:6d}  {what}" for what, n in self.counts.most_common()]
        return "\n".join(lines)
