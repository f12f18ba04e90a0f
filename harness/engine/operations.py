"""What an operator does to the relay, recorded: start serve in a slot, run the batch commands.

A relay that will not start raises RelayError (the runner records the failed
step and stops); a batch command that fails or hangs is recorded and judged
later by the checkers, never raised.
"""

from __future__ import annotations

import time

from relaychaos.engine import steps as S
from relaychaos.errors import HarnessError, RelayError
from relaychaos.recorder import Recorder
from relaychaos.stack.world import Stack

CHANGES_ROWS = (S.Send, S.Race, S.Resolve, S.Reprocess, S.Purge)  # the steps that may change a row of the ledger


def first_marks(steps: tuple[S.Step, ...] | list[S.Step]) -> frozenset[str]:
    """The marks made before any step that may change a row of the ledger (CHANGES_ROWS)."""
    out = set()
    for step in steps:
        if isinstance(step, CHANGES_ROWS):
            break
        if isinstance(step, S.Mark):
            out.add(step.name)
    return frozenset(out)


class Operator:
    """Starts relays and runs batch commands for one run; batch runs are killed at `batch_timeout_s`."""

    def __init__(
        self, stack: Stack, recorder: Recorder, batch_timeout_s: float, first_marks: frozenset[str] = frozenset()
    ):
        self.stack, self.recorder, self.batch_timeout_s = stack, recorder, batch_timeout_s
        self.marks: dict[str, float] = {}  # Mark name -> the unix time of its middle
        self.first_marks = first_marks  # marks made before any step of the run changed a row (first_marks())

    def start(self, step: S.Start) -> None:
        sup = self.stack.supervisor
        argv = list(sup.manifest.commands["serve"])
        self.recorder.starting(step.slot, argv)
        try:
            relay = self.stack.start_relay(step.slot)
        except RelayError as e:
            self.recorder.start_failed(step.slot, e.what)
            raise
        self.recorder.started(step.slot, relay.port, relay.child.pid)

    def resolve(self, step: S.Resolve) -> None:
        self._batch("resolve", self._age(step.min_age_s, step.since))

    def reprocess(self, step: S.Reprocess) -> None:
        self._batch("reprocess", step.max_attempts, step.parallel)

    def purge(self, step: S.Purge) -> None:
        self._batch("purge", self._age(step.retention_s, step.since))

    def mark(self, step: S.Mark) -> None:
        """Wait half, note the moment (wall clock: the rows' updated_at is unix time), wait the other half."""
        time.sleep(step.wait_s / 2)  # a wait for age, not for ordering
        self.marks[step.name] = time.time()
        time.sleep(step.wait_s / 2)

    def _age(self, seconds: float, since: str | None) -> float:
        """A batch run's age argument: `seconds`, or the time since the mark named. Sooner than `seconds` after the
        mark, it first waits until then: the rows changed before the mark stay older than the age it gives, and the
        age is never below `seconds` (a resolve's safe --min-age, contract section 6). After a mark made before any
        step of the run changed a row there are no such rows: the age is the larger of the two, at once."""
        if since is None:
            return seconds
        if since not in self.marks:
            raise HarnessError(
                f"a batch step ages its rows since mark {since!r}, which no step before it made",
                fix="put `- mark: {name: ...}` before it (the scenario file's checks refuse this)",
            )
        if since in self.first_marks:
            return max(seconds, round(time.time() - self.marks[since], 3))
        early = seconds - (time.time() - self.marks[since])
        if early > 0:
            self.recorder.aged(round(early, 3), seconds)
            time.sleep(early)  # a wait for age, not for ordering
        return round(time.time() - self.marks[since], 3)

    def _batch(self, command: str, argument: float, parallel: int = 1) -> None:
        sup = self.stack.supervisor
        taken = sup.manifest.arguments.effective(command, argument)
        if command != "reprocess" and taken > argument:  # a coarser age ([arguments]): rows keep theirs relative to it
            self.recorder.aged(round(taken - argument, 3), taken)
            time.sleep(taken - argument)  # a wait for age, not for ordering
        runs = []
        for _ in range(parallel):
            run = sup.start_batch(command, argument)
            self.recorder.batch_started(run.run, command, run.argument, list(run.argv), run.wall)
            runs.append(run)
        for run in runs:
            done = sup.wait_batch(run, timeout_s=self.batch_timeout_s)
            self.recorder.batch_ended(run.run, command, done.returncode, done.duration_s, done.wall, done.timed_out)
