"""The final phase of every run, as in Jepsen: heal, collect, let undecided rows age, resolve, reprocess, resolve.

Only then do the checkers judge: a correct relay has settled every GUID by now
(contract §5), so a row still SENT or UNKNOWN is a verdict. The --min-age used is
safe (§6): larger than ACCOUNT_TIMEOUT_MS plus the longest delay the run injected, as
the nemesis measured it (a latency toxic removed after 30 ms delayed nothing by more
than 30 ms, whatever its latency), so the final phase waits no longer than the faults
that were met call for.
"""

from __future__ import annotations

import time
from typing import Protocol

from relaychaos.engine import steps as S
from relaychaos.engine.client import Client
from relaychaos.engine.nemesis import Nemesis
from relaychaos.engine.observer import Observer
from relaychaos.recorder import Recorder
from relaychaos.stack.api_profile import CONTRACT_STATUSES
from relaychaos.stack.world import Stack
from relaychaos.tolerances import CURRENT as TOLERANCES


class Runner(Protocol):
    """What the final phase drives: relaychaos.engine.runner.Runner (named here, not imported: it imports this)."""

    stack: Stack
    scenario: S.Scenario
    recorder: Recorder
    client: Client
    observer: Observer
    nemesis: Nemesis

    def do(self, step: S.Step, n: int | str | None = None) -> bool: ...


UNDECIDED = ("SENT", "UNKNOWN", "RECEIVED")


def max_injected_delay_s(scenario: S.Scenario) -> float:
    """The longest delay the scenario's steps can inject (latency toxics, processing delay), however soon
    they are lifted: what a schedule must assume before it runs (the soak, the state machine)."""
    delay_s = 0.0
    for step in scenario.steps:
        if isinstance(step, S.AddToxic):
            delay_s = max(delay_s, step.delay_s)
        if isinstance(step, S.ServerFault) and step.delay_ms:
            delay_s = max(delay_s, step.delay_ms / 1000)
    return delay_s


def safe_min_age_s(scenario: S.Scenario, injected_delay_s: float | None = None) -> float:
    """A --min-age the contract calls safe: ACCOUNT_TIMEOUT_MS plus the longest injected delay (the one measured,
    when given; else the longest the steps can inject), plus a margin."""
    delay = max_injected_delay_s(scenario) if injected_delay_s is None else injected_delay_s
    return round(scenario.account_timeout_ms / 1000 + delay + TOLERANCES.min_age_margin_s, 3)


def converge(runner: Runner) -> None:
    """Heal, collect every call, and settle what is undecided with resolve, reprocess, resolve, each once a row
    needs it (in any profile: a keyed service's [ledger] maps its rows to the contract's statuses). A ledger that
    hides what is undecided (unreadable, a status its mapping does not name, an undecided row without its time)
    gets every batch command the relay has, once the last transfer is a safe age old."""
    runner.recorder.converge(done=False)
    runner.do(S.Heal(), "final")
    runner.client.collect()
    min_age = safe_min_age_s(runner.scenario, runner.nemesis.longest_delay_s())
    if _blind(runner):
        _settle_blind(runner, min_age)
    else:
        _settle(runner, min_age)
    runner.recorder.converge(done=True)


def _settle(runner: Runner, min_age: float) -> None:
    """Resolve what is undecided once old enough, reprocess what failed, resolve again (the commands the relay
    has: a keyed service may have no reprocess)."""
    commands = runner.stack.manifest.commands
    if _age_undecided(runner, min_age) and "resolve" in commands:
        runner.do(S.Resolve(min_age), "final")
    failed = any(r.get("status") == "FAILED" for r in (runner.observer.rows_or_none() or {}).values())
    if failed and "reprocess" in commands:
        runner.do(S.Reprocess(runner.scenario.max_attempts), "final")
    if _age_undecided(runner, min_age) and "resolve" in commands:
        runner.do(S.Resolve(min_age), "final")


def _blind(runner: Runner) -> bool:
    """Whether the harness cannot see which rows are undecided and since when: a ledger it cannot read, a status
    none of the contract's (a keyed service's value its [ledger] statuses do not map), an undecided row without its
    time (no [ledger] updated_at)."""
    rows = runner.observer.rows_or_none()
    if rows is None:
        return True
    return any(
        r.get("status") not in CONTRACT_STATUSES
        or (r["status"] in UNDECIDED and not isinstance(r.get("updated_at"), (int, float)))
        for r in rows.values()
    )


def _settle_blind(runner: Runner, min_age_s: float) -> None:
    """Resolve, reprocess, resolve (those the relay has), once every transfer (all collected) is min_age_s old."""
    commands = runner.stack.manifest.commands
    if "resolve" not in commands and "reprocess" not in commands:
        return
    runner.recorder.aged(min_age_s, min_age_s)  # every transfer was collected: from now on, each is old enough
    time.sleep(min_age_s)  # the rows cannot be read: a wait for age, not for ordering
    for step in (S.Resolve(min_age_s), S.Reprocess(runner.scenario.max_attempts), S.Resolve(min_age_s)):
        if S.kind(step) in commands:
            runner.do(step, "final")


def _age_undecided(runner: Runner, min_age_s: float) -> bool:
    """Wait until every undecided row is at least min_age_s old; whether there were any."""
    rows = runner.observer.rows_or_none() or {}
    ages = [r["updated_at"] for r in rows.values() if r.get("status") in UNDECIDED]
    if not ages:
        return False
    wait = max(ages) + min_age_s - time.time()
    if wait > 0:
        runner.recorder.aged(round(wait, 3), min_age_s)
        time.sleep(wait)  # rows must be old enough: a wait for age, not for ordering
    return True
