"""The scenario runner: executes any scenario against any relay, recording everything through one Recorder.

    history = run_scenario(stack, scenario)

Steps run in order, synchronously, except background sends, which the client
keeps until AwaitSends (or the final phase) collects them. Each step goes to the
part that does it (client, nemesis, operator, observer) through one dispatch
table keyed by step class, checked against the step catalogue when this module
loads. After every step the ledger is snapshotted (read-only); then comes the
final phase (final_phase.py); then the final observations. Checks run
afterwards, on the history alone.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from relaychaos import contract, words
from relaychaos.checkers import claims
from relaychaos.checkers.rulebook import CAPABILITIES
from relaychaos.engine import final_phase
from relaychaos.engine import steps as S
from relaychaos.engine.client import Client
from relaychaos.engine.nemesis import Nemesis
from relaychaos.engine.observer import Observer
from relaychaos.engine.operations import Operator, first_marks
from relaychaos.errors import HarnessError, RelayError
from relaychaos.history import History
from relaychaos.recorder import Recorder
from relaychaos.records.base import UNSET, UnsetType
from relaychaos.records.header import HistoryHeader, IncidentLabels
from relaychaos.stack.manifest import Manifest
from relaychaos.stack.world import Stack
from relaychaos.tolerances import CURRENT as TOLERANCES

LABEL = re.compile(r"[A-Za-z0-9_-]{1,40}")

# step class -> what does it, given the runner and a step of that class
DISPATCH: dict[type, Callable[[Runner, Any], bool | None]] = {  # False: the run cannot go on
    S.Send: lambda r, s: r.client.send(s),
    S.Race: lambda r, s: r.client.race(s),
    S.AwaitSends: lambda r, s: r.client.collect(),
    S.AddToxic: lambda r, s: r.nemesis.add_toxic(s),
    S.RemoveToxic: lambda r, s: r.nemesis.remove_toxic(s),
    S.DisableProxy: lambda r, s: r.nemesis.disable_proxy(s),
    S.EnableProxy: lambda r, s: r.nemesis.enable_proxy(s),
    S.ServerFault: lambda r, s: r.nemesis.server_fault(s),
    S.Release: lambda r, s: r.nemesis.release(s),
    S.Heal: lambda r, s: r.nemesis.heal(s),
    S.Kill: lambda r, s: r.nemesis.kill(s),
    S.Start: lambda r, s: r.operator.start(s),
    S.Resolve: lambda r, s: r.operator.resolve(s),
    S.Reprocess: lambda r, s: r.operator.reprocess(s),
    S.Purge: lambda r, s: r.operator.purge(s),
    S.Mark: lambda r, s: r.operator.mark(s),
    S.WaitCalls: lambda r, s: r.observer.wait_calls(s, r.guid(s.guid)),
    S.WaitRow: lambda r, s: r.observer.wait_row(s, r.guid(s.guid)),
    S.Wait: lambda r, s: time.sleep(s.seconds),
}
if set(DISPATCH) != set(S.STEP_KINDS.values()):
    raise ImportError(
        f"the runner's dispatch table and the step catalogue disagree: "
        f"{sorted(c.__name__ for c in set(DISPATCH) ^ set(S.STEP_KINDS.values()))}"
    )


class Runner:
    """One execution of one scenario on one stack, recording into `recorder` (a fresh one by default)."""

    def __init__(self, stack: Stack, scenario: S.Scenario, recorder: Recorder | None = None, tag: str | None = None):
        self.stack, self.scenario = stack, scenario
        self.recorder = recorder or Recorder()
        self.tag = tag or uuid.uuid4().hex[:8]
        self.guids: dict[str, str] = {}
        self.client: Client = Client(stack, self.recorder, scenario.account_timeout_ms, self.guid)
        self.nemesis: Nemesis = Nemesis(stack, self.recorder, self.guid)
        self.operator: Operator = Operator(stack, self.recorder, scenario.batch_timeout_s, first_marks(scenario.steps))
        self.observer: Observer = Observer(stack, self.recorder, self.tag)

    @property
    def history(self) -> History:
        """The history, held in memory (a run that streams it to disk reads it from its file: iter_events)."""
        history = self.recorder.history
        if not isinstance(history, History):
            raise TypeError("this run streams its history to disk: read it back with relaychaos.history.iter_events")
        return history

    def guid(self, label: str) -> str:
        """The run's GUID for a scenario label: opaque (a digest of the label and the run's tag), so that nothing a
        relay receives names the scenario, and ending in the tag, so that runs sharing a ledger tell their rows
        apart. The history records which label each GUID stands for; reports show both."""
        if not LABEL.fullmatch(label):
            raise HarnessError(
                f"GUID label {label!r} in scenario '{self.scenario.name}' is not 1-40 characters of A-Z a-z 0-9 - _",
                fix="rename it",
            )
        if label not in self.guids:
            digest = hashlib.sha256(f"{label}/{self.tag}".encode()).hexdigest()[:12]
            self.guids[label] = f"{digest}-{self.tag}"
            self.recorder.guid(label, self.guids[label])
        return self.guids[label]

    def run(self) -> History:
        """Run every step, then the final phase; the history holds it all."""
        try:
            if self.begin():
                for n, step in enumerate(self.scenario.steps, 1):
                    if not self.do(step, n):
                        break
        finally:
            self.finish()
        return self.history

    def begin(self) -> bool:
        """Record the scenario and start its relays (those not already running); False if one would not."""
        sc = self.scenario
        for step in sc.steps:
            for label in S.guids_of(step):
                self.guid(label)
        self.recorder.scenario(self.header())
        self.stack.supervisor.lock_delay_ms = sc.ledger_lock_delay_ms
        if sc.ledger_lock_delay_ms and "ledger" in self.stack.proxies:  # a PostgreSQL ledger: its link is as slow
            slow = S.AddToxic("ledger", "latency", name="slow_storage", attributes={"latency": sc.ledger_lock_delay_ms})
            if not self.do(slow, "start"):
                return False
        return all(self.do(S.Start(slot), "start") for slot in sc.relays if slot not in self.stack.supervisor.relays)

    def header(self) -> HistoryHeader:
        """The history's header: what a saved history needs to be judged again on its own."""
        sc = self.scenario
        profile, provides = _profile(self.stack.manifest)
        incident = {k: sc.incident.get(k) for k in ("guids", "broke", "rules")} if sc.incident else None
        return HistoryHeader(
            name=sc.name,
            family=sc.family,
            description=sc.description,
            accounts=sc.accounts,
            account_timeout_ms=sc.account_timeout_ms,
            max_attempts=sc.max_attempts,
            safe_min_age_s=final_phase.safe_min_age_s(sc),
            guids=dict(self.guids),
            steps=[S.describe(s) for s in sc.steps],
            claims=[claims.as_dict(c) for c in sc.claims],
            relay=self.stack.manifest.name,
            profile=profile,
            provides=provides,
            commands=_own_words(self.stack.manifest),
            statuses=_statuses(self.stack.manifest),
            tag=self.tag,
            contract=contract.VERSION,
            tolerances=TOLERANCES.as_dict(),
            incident=UNSET if incident is None else IncidentLabels.from_builtins(incident),
        )

    def do(self, step: S.Step, n: int | str | None = None) -> bool:
        """Run one step, record it, snapshot the ledger; False when the run cannot go on."""
        for label in S.guids_of(step):
            self.guid(label)
        self.recorder.step_started(n, S.describe(step))
        try:
            reached = DISPATCH[type(step)](self, step)
        except RelayError as e:
            self.recorder.step_failed(n, S.describe(step), str(e))
            return False
        self.recorder.step_done(n)
        self.observe(step, n)
        return reached is not False  # a wait that gave up ends the steps: what follows would test nothing

    def observe(self, step: S.Step, n: int | str | None) -> None:
        """What is looked at after each step: the ledger, and whether the stack is as the harness set it."""
        self.observer.snapshot(n, S.kind(step))
        self.observer.audit(n)

    def finish(self) -> None:
        """The final phase (heal, collect, resolve, reprocess), then the final observations."""
        try:
            final_phase.converge(self)
        finally:
            self.client.close()
        self.observer.snapshot("end", "end")
        self.observer.audit("end")
        self.observer.schema()
        self.observer.account_stats()

    def rows(self) -> dict[str, dict]:
        """This run's ledger rows (GUIDs carry the run's tag, so a shared ledger is no problem)."""
        return self.observer.rows()


def run_scenario(
    stack: Stack, scenario: S.Scenario, tag: str | None = None, recorder: Recorder | None = None
) -> History:
    """Run scenario on stack (its relays not yet started) and return the full history."""
    return Runner(stack, scenario, recorder, tag).run()


def _own_words(manifest: Manifest) -> dict[str, str] | UnsetType:
    """A keyed service's names for the contract's batch commands and flags (relaychaos.words); a course relay's
    are the contract's: UNSET."""
    own = words.own_commands(manifest.profile.name, manifest.commands, manifest.arguments.templates)
    return own or UNSET


def _statuses(manifest: Manifest) -> list[str] | UnsetType:
    """The contract's statuses a service's own table can show ([ledger] statuses' values); a course relay's
    ledger (and a black box's) is not limited: UNSET."""
    ledger = manifest.profile.ledger
    if manifest.profile.name == "course" or ledger.kind != "postgresql":
        return UNSET
    return sorted(set(ledger.statuses.values()))


def _profile(manifest: Manifest) -> tuple[str | UnsetType, list[str] | UnsetType]:
    """What a course relay's header leaves out (it offers every capability); a relay of another profile or
    ledger records its profile and what it offers, so every later check of its history skips the same rules."""
    provides = manifest.profile.provides(manifest.commands)
    if manifest.profile.name == "course" and provides == frozenset(CAPABILITIES):
        return UNSET, UNSET
    return manifest.profile.name, sorted(provides)
