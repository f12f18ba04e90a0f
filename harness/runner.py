"""The scenario runner: executes any scenario against any relay and records everything in one history.

    history = run_scenario(stack, scenario)

Steps run in order, synchronously, except background sends, which live on a
loop thread until AwaitSends (or the final phase) collects them. After every
step the ledger is snapshotted (read-only). Then comes the final phase, as in
Jepsen: heal every fault, collect every call, let undecided rows age past a
safe --min-age, resolve, reprocess, resolve; then the final ledger and the
account system's statistics are recorded. Checks run afterwards, on the
history alone.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import re
import sqlite3
import time
import uuid

from . import contract
from . import steps as S
from .channel import Channel, RetryPolicy, transfer
from .errors import HarnessError, RelayError
from .history import History
from .loop_thread import LoopThread
from .stack import Stack, read_ledger
from .tolerances import CURRENT as TOLERANCES

LABEL = re.compile(r"[A-Za-z0-9_-]{1,40}")
GUID_PLACEHOLDER = "${guid}"  # in a raw body: replaced by the run's GUID for the step's label
UNDECIDED = ("SENT", "UNKNOWN", "RECEIVED")


def max_injected_delay_s(scenario: S.Scenario) -> float:
    """The longest delay the scenario injects on purpose (latency toxics, processing delay)."""
    delay_ms = 0.0
    for step in scenario.steps:
        if isinstance(step, S.AddToxic) and step.kind == "latency":
            delay_ms = max(delay_ms, float(step.attributes.get("latency", 0)) + float(step.attributes.get("jitter", 0)))
        if isinstance(step, S.ServerFault) and step.delay_ms:
            delay_ms = max(delay_ms, step.delay_ms)
    return delay_ms / 1000


def safe_min_age_s(scenario: S.Scenario) -> float:
    """A --min-age the contract calls safe: ACCOUNT_TIMEOUT_MS plus the longest injected delay, plus a margin."""
    return round(scenario.account_timeout_ms / 1000 + max_injected_delay_s(scenario) + TOLERANCES.min_age_margin_s, 3)


class Runner:
    """One execution of one scenario on one stack (see the module doc)."""

    def __init__(self, stack: Stack, scenario: S.Scenario, tag: str | None = None):
        self.stack, self.scenario = stack, scenario
        self.history: History = stack.history
        self.tag = tag or uuid.uuid4().hex[:8]
        self.guids: dict[str, str] = {}
        self.loop = LoopThread()
        self.channels: dict[tuple, Channel] = {}
        self.pending: list[concurrent.futures.Future] = []
        self.executed: list = []  # every step run, in order (the final phase's included)

    # -- labels ------------------------------------------------------------------------
    def guid(self, label: str) -> str:
        if not LABEL.fullmatch(label):
            raise HarnessError(f"GUID label {label!r} in scenario '{self.scenario.name}' is not 1-40 characters "
                               "of A-Z a-z 0-9 - _", fix="rename it")
        if label not in self.guids:
            self.guids[label] = f"{label}-{self.tag}"
            self.history.append("runner", "ok", "guid", label=label, guid=self.guids[label])
        return self.guids[label]

    # -- the run -----------------------------------------------------------------------
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
        self.history.append("runner", "ok", "scenario", name=sc.name, family=sc.family, description=sc.description,
                            accounts=sc.accounts, account_timeout_ms=sc.account_timeout_ms,
                            max_attempts=sc.max_attempts, safe_min_age_s=safe_min_age_s(sc), guids=dict(self.guids),
                            steps=[S.describe(s) for s in sc.steps], relay=self.stack.manifest.name, tag=self.tag,
                            contract=contract.VERSION, tolerances=TOLERANCES.as_dict())
        return all(self.do(S.Start(slot), "start") for slot in sc.relays if slot not in self.stack.supervisor.relays)

    def do(self, step, n=None) -> bool:
        """Run one step, record it, snapshot the ledger; False when the run cannot go on."""
        for label in S.guids_of(step):
            self.guid(label)
        self.history.append("runner", "invoke", "step", n=n, step=S.describe(step))
        self.executed.append(step)
        try:
            getattr(self, "_" + S.kind(step))(step)
        except RelayError as e:
            self.history.append("runner", "fail", "step", n=n, step=S.describe(step), error=str(e))
            return False
        self.history.append("runner", "ok", "step", n=n)
        self._snapshot(n, S.kind(step))
        return True

    def finish(self) -> None:
        """The final phase (heal, collect, resolve, reprocess), then the final observations."""
        try:
            self._converge()
        finally:
            self._collect(timeout_s=TOLERANCES.collect_timeout_s)
            self._close_channels()
            self.loop.close()
        self._snapshot("end", "end")
        self._schema_observation()
        self.stack.account_stats()

    def rows(self) -> dict[str, dict]:
        """This run's ledger rows (GUIDs carry the run's tag, so a shared ledger is no problem)."""
        return read_ledger(self.stack.ledger_path, suffix=f"-{self.tag}")

    def _snapshot(self, n, kind: str) -> None:
        try:
            rows = self.rows()
        except Exception as e:  # sqlite3 errors: a missing table or column is the relay's fault
            self.history.append("observer", "fail", "ledger-snapshot", after_step=n, kind=kind, error=str(e))
            return
        self.history.append("observer", "ok", "ledger-snapshot", after_step=n, kind=kind, wall=time.time(),
                            rows=rows)

    def _schema_observation(self) -> None:
        try:
            conn = sqlite3.connect(f"file:{self.stack.ledger_path}?mode=ro", uri=True)
            cols = [r[1] for r in conn.execute("PRAGMA table_info(ledger)")]
            conn.close()
        except Exception as e:
            cols, error = [], str(e)
        else:
            error = None
        self.history.append("observer", "ok", "ledger-schema", columns=cols, error=error)

    # -- the final phase ---------------------------------------------------------------
    def _converge(self) -> None:
        self.history.append("runner", "invoke", "converge")
        self.do(S.Heal(), "final")
        self._collect(timeout_s=TOLERANCES.collect_timeout_s)
        min_age = safe_min_age_s(dataclasses.replace(self.scenario, steps=self.scenario.steps + tuple(self.executed)))
        if self._age_undecided(min_age):
            self.do(S.Resolve(min_age), "final")
        if self._has_rows("FAILED"):
            self.do(S.Reprocess(self.scenario.max_attempts), "final")
        if self._age_undecided(min_age):
            self.do(S.Resolve(min_age), "final")
        self.history.append("runner", "ok", "converge")

    def _has_rows(self, *statuses: str) -> bool:
        try:
            return any(r.get("status") in statuses for r in self.rows().values())
        except Exception:
            return False

    def _age_undecided(self, min_age_s: float) -> bool:
        """Wait until every undecided row is at least min_age_s old; whether there were any."""
        try:
            rows = self.rows()
        except Exception:
            return False
        ages = [r["updated_at"] for r in rows.values() if r.get("status") in UNDECIDED]
        if not ages:
            return False
        wait = max(ages) + min_age_s - time.time()
        if wait > 0:
            self.history.append("runner", "ok", "age", seconds=round(wait, 3), min_age_s=min_age_s)
            time.sleep(wait)  # rows must be old enough: a wait for age, not for ordering
        return True

    # -- the channel -------------------------------------------------------------------
    def _channel(self, slot: str, via_hub: bool, timeout_s: float | None) -> Channel:
        timeout = timeout_s if timeout_s is not None else TOLERANCES.channel_timeout_s(self.scenario.account_timeout_ms)
        key = (slot, via_hub, timeout)
        if key not in self.channels:
            ch = self.stack.channel(slot, via_hub=via_hub, timeout_s=timeout)
            ch.delivery_cap_s = TOLERANCES.delivery_cap_s
            ch.name = f"channel-{slot}{'' if via_hub else '-direct'}-{len(self.channels)}"
            self.loop.run(ch.__aenter__())
            self.channels[key] = ch
        return self.channels[key]

    def _close_channels(self) -> None:
        for ch in self.channels.values():
            self.loop.run(ch.__aexit__(None, None, None))
        self.channels.clear()

    def _collect(self, timeout_s: float) -> None:
        pending, self.pending = self.pending, []
        concurrent.futures.wait(pending, timeout=timeout_s)

    def _request(self, label: str, amount: int, src: str, dst: str) -> dict:
        return transfer(self.guid(label), src, dst, amount)

    # -- one method per step kind -------------------------------------------------------
    def _send(self, step: S.Send) -> None:
        ch = self._channel(step.slot, step.via_hub, step.timeout_s)
        if step.raw is not None:
            body = step.raw.replace(GUID_PLACEHOLDER, self.guid(step.guid))
            coro = ch.send_raw(body.encode(), guid=self.guid(step.guid))
        elif step.careless:
            coro = self._careless(ch, step)
        else:
            coro = ch.send(self._request(step.guid, step.amount, step.src, step.dst), RetryPolicy(step.attempts),
                           intent=step.guid)
        future = self.loop.submit(coro)
        if step.background:
            self.pending.append(future)
        else:
            future.result()

    async def _careless(self, ch: Channel, step: S.Send) -> None:
        """A client that mints a new GUID for every retry: the client-side incident."""
        for attempt in range(1, step.attempts + 1):
            label = step.guid if attempt == 1 else f"{step.guid}-retry{attempt}"
            outcome = await ch.send_once(self._request(label, step.amount, step.src, step.dst), attempt=attempt,
                                         intent=step.guid)
            if outcome.kind not in RetryPolicy().retry_on:
                return

    def _race(self, step: S.Race) -> None:
        request = self._request(step.guid, step.amount, step.src, step.dst)
        per_slot = [step.n // len(step.slots) + (i < step.n % len(step.slots)) for i in range(len(step.slots))]

        chans = [self._channel(slot, step.via_hub, None) for slot in step.slots]

        async def go():
            await asyncio.gather(*(ch.race(request, k) for ch, k in zip(chans, per_slot)))
        self.loop.run(go())

    def _add_toxic(self, step: S.AddToxic) -> None:
        self.stack.add_toxic(step.proxy, step.kind, stream=step.stream, name=step.name, **step.attributes)

    def _remove_toxic(self, step: S.RemoveToxic) -> None:
        self.stack.remove_toxic(step.proxy, step.name)

    def _disable_proxy(self, step: S.DisableProxy) -> None:
        self.stack.set_proxy_enabled(step.proxy, False)

    def _enable_proxy(self, step: S.EnableProxy) -> None:
        self.stack.set_proxy_enabled(step.proxy, True)

    def _server_fault(self, step: S.ServerFault) -> None:
        spec: dict = {}
        if step.delay_ms is not None:
            spec["delay_ms"] = step.delay_ms
        if step.e500_next is not None:
            spec["e500_next"] = step.e500_next
        spec["e500_guids"] = [self.guid(g) for g in step.e500_guids]
        spec["hold_guids"] = [self.guid(g) for g in step.hold_guids]
        self.stack.account.set_faults(**spec)
        self.history.append("nemesis", "ok", "server-fault", **spec)

    def _release(self, step: S.Release) -> None:
        guids = None if step.guids is None else [self.guid(g) for g in step.guids]
        self.stack.account.release(guids)
        self.history.append("nemesis", "ok", "release", guids=guids)

    def _wait_calls(self, step: S.WaitCalls) -> None:
        guid = self.guid(step.guid)
        got = self.stack.account.wait_calls(guid, step.count, step.timeout_s)
        self.history.append("runner", "ok" if got >= step.count else "info", "wait-calls", guid=guid,
                            calls=got, wanted=step.count)

    def _wait_row(self, step: S.WaitRow) -> None:
        guid, deadline = self.guid(step.guid), time.monotonic() + step.timeout_s
        status = None
        while time.monotonic() < deadline:
            try:
                status = self.rows().get(guid, {}).get("status")
            except Exception:
                status = None
            if status == step.status:
                break
            time.sleep(0.005)  # polling an observation, not ordering by sleep
        self.history.append("runner", "ok" if status == step.status else "info", "wait-row", guid=guid,
                            status=status, wanted=step.status)

    def _kill(self, step: S.Kill) -> None:
        self.stack.kill_relay(step.slot)

    def _start(self, step: S.Start) -> None:
        self.stack.start_relay(step.slot)

    def _resolve(self, step: S.Resolve) -> None:
        self._batch("resolve", ["--min-age", _num(step.min_age_s)])

    def _reprocess(self, step: S.Reprocess) -> None:
        self._batch("reprocess", ["--max-attempts", str(step.max_attempts)], step.parallel)

    def _purge(self, step: S.Purge) -> None:
        self._batch("purge", ["--retention", _num(step.retention_s)])

    def _batch(self, command: str, args: list[str], parallel: int = 1) -> None:
        sup = self.stack.supervisor
        runs = [sup.start_batch(command, args) for _ in range(parallel)]
        for run in runs:
            sup.wait_batch(command, run, timeout_s=self.scenario.batch_timeout_s)

    def _wait(self, step: S.Wait) -> None:
        time.sleep(step.seconds)

    def _await_sends(self, step: S.AwaitSends) -> None:
        self._collect(timeout_s=TOLERANCES.collect_timeout_s)

    def _heal(self, step: S.Heal) -> None:
        self.stack.heal()


def _num(seconds: float) -> str:
    return json.dumps(seconds) if float(seconds) != int(seconds) else str(int(seconds))


def run_scenario(stack: Stack, scenario: S.Scenario, tag: str | None = None) -> History:
    """Run scenario on stack (its relay not yet started) and return the full history."""
    return Runner(stack, scenario, tag).run()
