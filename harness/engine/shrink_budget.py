"""Shrinking within a time budget, by the state machine's own logic and Hypothesis's public API alone.

    budget = ShrinkBudget(limit_s=10)     # one per test run of the machine; None: no limit

Hypothesis shrinks a failure by running smaller candidate stories until no smaller one fails. Each
candidate of the chaos machine is a real run (processes, faults, waits), so shrinking a long story
could take minutes. The budget starts at the first failure; past `limit_s` seconds:

- every story that failed while running is remembered by its trace: the rules and arguments
  Hypothesis drew, which decide the story (every toxic has toxicity 1.0, and Hypothesis draws every
  random choice);
- a candidate is not run: its rules are only traced, and at its end, unless its trace is a remembered
  failing story, `hypothesis.reject()` ends it at no cost. Hypothesis counts it as invalid, not as
  passing, so it learns nothing false and keeps the failure it has. (Not earlier: an earlier real
  run of the same first choices went on drawing, and a candidate that stops where that one went on
  is to Hypothesis a test whose data generation changed, FlakyStrategyDefinition);
- a candidate whose trace reaches a remembered failure fails again with that failure's error,
  without running: that story did run and fail. This holds within the budget too: a real run of a
  story once seen failing may pass on a loaded machine, and Hypothesis, which expects the same
  choices to give the same outcome, would then stop with a Flaky error. For the same reason a story
  seen passing the per-step check at a step is not failed there later: a violation found there is
  left to the full check at its end, which judges the whole history (seen_passing).

Hypothesis then runs out of candidates it can use, stops shrinking, and replays the smallest failing
story it holds to report it. That story is a remembered one, so the replay fails as before: Hypothesis
raises FlakyFailure only when its final replay passes or rejects (hypothesis/core.py, run_engine),
and it never does here. `rejected` counts the candidates the budget cut: none means shrinking ended
on its own.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import reject

Trace = tuple  # ((rule name, ((argument, value), ...)), ...): a story as Hypothesis drew it
# The methods take a trace as a Sequence (the machine builds its own in a list) and key by tuple(trace).


@dataclass
class Remembered:
    """A failing story: its error as raised, and where it failed."""

    error: BaseException
    at_end: bool  # in the final checks of the whole story; else at its last step (a longer story fails there too)
    story: Any = None  # what the machine keeps to report it (steps, report text)


@dataclass
class ShrinkBudget:
    """The shrinking budget of one run of the machine, and the failing stories seen in it."""

    limit_s: float | None  # None: Hypothesis's own limit
    started: float | None = None  # time.monotonic() of the first failure
    failures: dict[Trace, Remembered] = field(default_factory=dict)
    passed: set[Trace] = field(default_factory=set)  # stories seen passing the per-step check at their last step
    rejected: int = 0  # candidates ended by reject() past the budget
    recalled: int = 0  # candidates failed from the record past the budget

    def spent(self) -> bool:
        """Whether shrinking has had its time: a failure was found at least `limit_s` seconds ago."""
        return self.limit_s is not None and self.started is not None and time.monotonic() - self.started >= self.limit_s

    @property
    def cut(self) -> bool:
        """Whether the budget ended shrinking before Hypothesis had tried every candidate it wanted."""
        return self.rejected > 0

    def remember(self, trace: Sequence[Any], error: BaseException, at_end: bool, story: Any = None) -> None:
        """Record a story that failed while running (the first one starts the clock)."""
        if self.started is None:
            self.started = time.monotonic()
        trace = tuple(trace)
        self.failures.setdefault(trace, Remembered(error, at_end, story))

    def failing_here(self, trace: Sequence[Any]) -> Remembered | None:
        """The failure remembered for a story that reaches this step, if any: a candidate whose trace gets
        here fails as that story did, past the budget or not (so Hypothesis sees one outcome per story)."""
        known = self.failures.get(tuple(trace))
        if known is not None and not known.at_end:
            self.recalled += 1
            return known
        return None

    def failing_at_end(self, trace: Sequence[Any]) -> Remembered | None:
        """The failure remembered for this whole story, if any."""
        known = self.failures.get(tuple(trace))
        if known is not None and known.at_end:
            self.recalled += 1
            return known
        return None

    def seen_passing(self, trace: Sequence[Any]) -> bool:
        """Whether a story with this trace once passed the per-step check here (the machine then leaves a
        violation here to the check at the story's end, so that this story goes on as it went before)."""
        return tuple(trace) in self.passed

    def note_passed(self, trace: Sequence[Any]) -> None:
        self.passed.add(tuple(trace))

    def reject_unless_remembered(self, trace: Sequence[Any]) -> None:
        """Past the budget, at a candidate's end: reject it unless its whole trace is a remembered failing story."""
        if tuple(trace) not in self.failures:
            self._reject()

    def _reject(self) -> None:
        self.rejected += 1
        reject()

    @staticmethod
    def again(error: BaseException) -> BaseException:
        """A fresh copy of a remembered error to raise again (Hypothesis adds notes to what it reports)."""
        try:
            fresh = copy.copy(error)
        except Exception:  # noqa: BLE001 - an error that cannot be copied is raised as it is
            return error
        fresh.__dict__.pop("__notes__", None)
        fresh.__traceback__ = None
        return fresh
