"""One soak: the generator on the client's loop, the nemesis and the cron on threads of their own, then the
final phase; everything recorded through one Recorder, exactly as a scenario's run.

    result = Soak(stack, schedule, rate=500, seed=7, recorder=recorder, status=status).run(stop)

The soak ends at the schedule's duration, when `stop` (a threading.Event: Ctrl-C)
is set, or when a relay dies and will not start again (the failed start is in
the history, where the `serve-ready` rule finds it). Whatever ended it, the
traffic in flight is collected and the final phase (heal, resolve, reprocess)
runs, so the history so far can be checked. The ledger is snapshotted after
each batch run (the one after the previous run is the one before this one, but
for purge, which gets one of its own just before) and at the start and the end,
not after every fault, and only the columns the rules read: at soak scale a full
snapshot after each step would dwarf the traffic.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from relaychaos.engine import steps as S
from relaychaos.engine.observer import Observer
from relaychaos.engine.runner import Runner
from relaychaos.recorder import Recorder
from relaychaos.soak.generator import ACCOUNTS, Counts, Generator
from relaychaos.soak.schedule import MAX_ATTEMPTS, Action, Schedule
from relaychaos.soak.status import Status, line
from relaychaos.stack.world import Stack
from relaychaos.tolerances import CURRENT as TOLERANCES

BATCH_KINDS = ("resolve", "reprocess", "purge")
BULKY = ("request", "response")
# resolve queries every undecided row, one by one: at production rates that is thousands of rows, some of them
# while the account system does not answer; 30 s (the scenarios' limit) is too short for a correct relay
BATCH_TIMEOUT_S = 120.0
WATCH_EVERY_S = 0.25  # how often the nemesis looks for a relay that died by itself


class SoakObserver(Observer):
    """An Observer whose ledger rows leave out the request and response texts (no rule reads them)."""

    def rows(self) -> dict[str, dict]:
        return {g: {k: v for k, v in r.items() if k not in BULKY} for g, r in super().rows().items()}


class SoakRunner(Runner):
    """A Runner whose ledger snapshots come only after batch runs, at the start and at the end (audits: those two)."""

    def __init__(self, stack: Stack, scenario: S.Scenario, recorder: Recorder | None = None, tag: str | None = None):
        super().__init__(stack, scenario, recorder, tag)
        self.observer = SoakObserver(self.stack, self.recorder, self.tag)

    def observe(self, step: S.Step, n: int | str | None) -> None:
        if S.kind(step) in BATCH_KINDS or n in ("start", "final"):
            self.observer.snapshot(n, S.kind(step))
        if n in ("start", "final"):  # mid-soak, the nemesis may be changing the stack while another thread looks
            self.observer.audit(n)


@dataclass
class SoakResult:
    """How the soak went: the generator's counts, the faults done, why it stopped early (None: it did not)."""

    counts: Counts
    faults_done: list[str] = field(default_factory=list)
    batches_done: list[str] = field(default_factory=list)
    stopped_because: str | None = None
    started_at: float = 0.0  # CLOCK_MONOTONIC, as the history's times
    ended_at: float = 0.0


class Soak:
    """Runs one schedule against one stack (its relays not yet started); see the module doc."""

    def __init__(
        self,
        stack: Stack,
        schedule: Schedule,
        *,
        rate: float,
        recorder: Recorder,
        status: Status,
        account_timeout_ms: int,
    ):
        self.stack, self.schedule, self.rate, self.status = stack, schedule, rate, status
        scenario = S.Scenario(
            f"soak-seed{schedule.seed}",
            schedule.steps(),
            family="soak",
            accounts=dict(ACCOUNTS),
            description=f"soak at {rate:g} transfers/s for {schedule.duration_s:g} s, nemesis "
            f"schedule of seed {schedule.seed}",
            account_timeout_ms=account_timeout_ms,
            max_attempts=MAX_ATTEMPTS,
            batch_timeout_s=BATCH_TIMEOUT_S,
        )
        self.runner = SoakRunner(stack, scenario, recorder)
        self.done_actions = 0  # nemesis actions done so far (the generator's holds wait for them)
        self.generator = Generator(
            stack,
            recorder,
            rate=rate,
            seed=schedule.seed,
            tag=self.runner.tag,
            account_timeout_ms=account_timeout_ms,
            hold=self.holding,
        )
        self.result = SoakResult(self.generator.counts)
        self.fault: str | None = None  # the fault in force now
        self._halt = threading.Event()  # the nemesis and the cron stop at it
        self.error: BaseException | None = None  # what broke the harness's own part (re-raised by run)

    def run(self, stop: threading.Event) -> SoakResult:
        """Soak until the duration ends, `stop` is set or a relay will not start; then the final phase."""
        r = self.result
        try:
            if not self.runner.begin():
                r.stopped_because = "relay slot a would not start"
                return r
            r.started_at = start = time.monotonic()
            loop = self.runner.client.loop
            stop_traffic = loop.run(_event())
            traffic = loop.submit(self.generator.run(stop_traffic))
            threads = [
                threading.Thread(
                    target=self._guarded, args=(part, start), name=f"soak-{part.__name__[1:]}", daemon=True
                )
                for part in (self._nemesis, self._cron)
            ]
            for t in threads:
                t.start()
            try:
                self._watch(start, stop, traffic)
            finally:
                self._halt.set()
                loop.loop.call_soon_threadsafe(stop_traffic.set)
                self.status.update(self.status_line(start))
                self.status.done()
                traffic.result(timeout=TOLERANCES.collect_timeout_s + 10)
                for t in threads:
                    t.join(self.runner.scenario.batch_timeout_s + 10)
                r.ended_at = time.monotonic()
        finally:
            self.runner.finish()  # the final phase and the final observations, whatever happened
        if self.error is not None:
            raise self.error
        return r

    def _guarded(self, part: Callable[[float], None], start: float) -> None:
        """Run the nemesis or the cron; an error of the harness's own (Toxiproxy, the fixture) halts the soak."""
        try:
            part(start)
        except Exception as e:  # kept, and raised again by run() once everything is collected
            self.error = self.error or e
            self._halt_because(f"the soak's {part.__name__[1:]} failed: {e}")

    def _watch(self, start: float, stop: threading.Event, traffic: concurrent.futures.Future) -> None:
        """The main thread's part: the status line, until the end, a stop, or a failure of the traffic."""
        while time.monotonic() - start < self.schedule.duration_s:
            if stop.is_set():
                self.result.stopped_because = self.result.stopped_because or "interrupted (Ctrl-C)"
                return
            if self._halt.is_set():
                return
            if traffic.done():
                traffic.result()  # raises what stopped the generator
                return
            self.status.update(self.status_line(start))
            stop.wait(0.5)

    def status_line(self, start: float) -> str:
        c = self.generator.counts
        return line(
            time.monotonic() - start,
            self.schedule.duration_s,
            c.sent,
            c.achieved_rate(),
            self.rate,
            dict(c.codes),
            c.in_flight,
            self.fault,
            c.missed,
        )

    def _halt_because(self, why: str) -> None:
        self.result.stopped_because = self.result.stopped_because or why
        self.status.say(why)
        self._halt.set()

    def _wait_until(self, at: float, watch: bool = False) -> bool:
        """Wait for monotonic time `at`; False when the soak is halting. `watch`: restart relays that died."""
        while (left := at - time.monotonic()) > 0:
            if self._halt.wait(min(left, WATCH_EVERY_S)):
                return False
            if watch and not self._restart_dead():
                return False
        return not self._halt.is_set()

    def _restart_dead(self) -> bool:
        """Start again a relay that exited without being killed; False (and the soak halts) if it will not."""
        for slot, relay in list(self.stack.supervisor.relays.items()):
            if relay.child.alive():
                continue
            self.status.say(
                f"relay {slot} (pid {relay.child.pid}) exited by itself with status "
                f"{relay.child.popen.returncode}; starting it again"
            )
            if not self.runner.do(S.Start(slot), "restart"):
                self._halt_because(f"relay {slot} died and would not start again: the soak stops here")
                return False
        return True

    def _nemesis(self, start: float) -> None:
        """Do the schedule's faults and heals in time order, watching the relays in between."""
        for i, action in enumerate(self.schedule.nemesis, 1):
            if not self._wait_until(start + action.at, watch=True):
                return
            if action.kind in ("fault", "heal"):
                self.fault = action.fault if action.kind == "fault" else None
            if not self._do(action, f"n{i}"):
                self._halt_because(
                    f"{action.fault}: {S.describe(action.steps[-1])} failed: the relay would not "
                    "start again; the soak stops here"
                )
                return
            self.done_actions = i
            if action.kind in ("heal", "join"):
                self.result.faults_done.append(action.fault)
        self.fault = None

    def holding(self, now: float) -> bool:
        """Whether the generator must hold new calls now: a guarded action is due soon and not done yet."""
        start = self.result.started_at
        for action in self.schedule.nemesis[self.done_actions :]:
            if start + action.at - action.guard_s > now:
                return False  # actions are in time order; a guard is shorter than the gaps between them
            if action.guard_s:
                return not self._halt.is_set()
        return False

    def _cron(self, start: float) -> None:
        """Run resolve, reprocess and purge on their cadence (each followed by a ledger snapshot)."""
        for i, action in enumerate(self.schedule.cron, 1):
            if not self._wait_until(start + action.at):
                return
            if isinstance(action.steps[0], S.Purge):  # a row DONE and purged between two snapshots would look
                self.runner.observer.snapshot(f"c{i}", "before-purge")  # like an undecided row deleted
            self._do(action, f"c{i}")
            self.result.batches_done.append(S.kind(action.steps[0]))

    def _do(self, action: Action, n: str) -> bool:
        return all(self.runner.do(step, n) for step in action.steps)


async def _event() -> asyncio.Event:
    """An asyncio.Event made on the loop that will wait on it."""
    return asyncio.Event()
