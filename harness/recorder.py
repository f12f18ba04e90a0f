"""The one recorder of a run: every event goes through one of its methods into one append-only History.

    recorder = Recorder()
    recorder.toxic_added("account", "account", "drop", "timeout", "downstream", {"timeout": 0})

Each method is one kind of event and names its fields, so checkers read fields and
never parse text: a batch run's `argument` and `timed_out`, a channel call's
`timed_out`, `sent_at` and `retransmits`, a proxy's `side` ("channel" for the hub
proxies in front of the relays, "account" for the one behind them), a relay's `slot`.
A run gets a fresh Recorder, passed to the runner and to the channels it opens;
nothing else writes a history.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from relaychaos.events import Op
from relaychaos.history import Event, EventLog, History
from relaychaos.records.header import HistoryHeader


class Recorder:
    """Typed writing into one History (see the module doc); `clock` is CLOCK_MONOTONIC unless given."""

    def __init__(self, history: EventLog | None = None, clock: Callable[[], float] = time.monotonic):
        self.history: EventLog = history if history is not None else History()
        self._clock = clock
        self.guids_sent: set[str] = set()  # every GUID the channel has sent in this run (the ledger's rows' bound)

    def _add(self, process: str, type: str, f: str, **value: Any) -> Event:
        return self.history.append(process, type, f, at=self._clock(), **value)

    # -- the runner ----------------------------------------------------------------------
    def scenario(self, header: HistoryHeader) -> Event:
        """The header: the scenario, its GUIDs, the relay, the contract version and the tolerances in force
        (relaychaos.records.header; the event's value is its JSON)."""
        return self._add("runner", "ok", Op.SCENARIO, **header.to_builtins())

    def guid(self, label: str, guid: str) -> Event:
        return self._add("runner", "ok", Op.GUID, label=label, guid=guid)

    def step_started(self, n: int | str | None, step: str) -> Event:
        return self._add("runner", "invoke", Op.STEP, n=n, step=step)

    def step_done(self, n: int | str | None) -> Event:
        return self._add("runner", "ok", Op.STEP, n=n)

    def step_failed(self, n: int | str | None, step: str, error: str) -> Event:
        return self._add("runner", "fail", Op.STEP, n=n, step=step, error=error)

    def converge(self, done: bool) -> Event:
        return self._add("runner", "ok" if done else "invoke", Op.CONVERGE)

    def aged(self, seconds: float, min_age_s: float) -> Event:
        return self._add("runner", "ok", Op.AGE, seconds=seconds, min_age_s=min_age_s)

    def waited_calls(self, guid: str, calls: int, wanted: int) -> Event:
        return self._add(
            "runner", "ok" if calls >= wanted else "info", Op.WAIT_CALLS, guid=guid, calls=calls, wanted=wanted
        )

    def waited_row(self, guid: str, status: str | None, wanted: str) -> Event:
        return self._add(
            "runner", "ok" if status == wanted else "info", Op.WAIT_ROW, guid=guid, status=status, wanted=wanted
        )

    # -- the channel ---------------------------------------------------------------------
    def transfer_sent(
        self,
        process: str,
        guid: str | None,
        attempt: int,
        *,
        request: dict | None = None,
        raw: str | None = None,
        intent: str | None = None,
        race: int | None = None,
    ) -> Event:
        """A channel call begins: a well-formed `request`, or a `raw` body sent verbatim."""
        fields: dict[str, Any] = {"request": request} if raw is None else {"raw": raw}
        fields.update({k: v for k, v in (("intent", intent), ("race", race)) if v})
        if guid is not None:
            self.guids_sent.add(guid)
        return self._add(process, "invoke", Op.TRANSFER, guid=guid, attempt=attempt, **fields)

    def transfer_answered(
        self,
        process: str,
        guid: str | None,
        attempt: int,
        *,
        status: int,
        code: str | None,
        body: str,
        sent_at: float | None,
        retransmits: int,
    ) -> Event:
        return self._add(
            process,
            "ok",
            Op.TRANSFER,
            guid=guid,
            attempt=attempt,
            code=code,
            status=status,
            body=body,
            sent_at=sent_at,
            retransmits=retransmits,
        )

    def transfer_unanswered(
        self,
        process: str,
        guid: str | None,
        attempt: int,
        *,
        error: str,
        timed_out: bool,
        sent_at: float | None,
        retransmits: int,
    ) -> Event:
        """No answer: indeterminate (`info`), whether the channel gave up (`timed_out`) or the connection broke."""
        return self._add(
            process,
            "info",
            Op.TRANSFER,
            guid=guid,
            attempt=attempt,
            error=error,
            timed_out=timed_out,
            sent_at=sent_at,
            retransmits=retransmits,
        )

    def accept_delay(self, process: str, guid: str | None, retransmits: int, race: int) -> Event:
        """The relay's kernel dropped this connection's segments: its accept queue was full."""
        return self._add(process, "ok", Op.ACCEPT_DELAY, guid=guid, retransmits=retransmits, race=race)

    # -- the nemesis: every fault --------------------------------------------------------
    def toxic_adding(self, proxy: str, side: str, toxic: str, kind: str, stream: str, attributes: dict) -> Event:
        return self._add(
            "nemesis",
            "invoke",
            Op.ADD_TOXIC,
            proxy=proxy,
            side=side,
            toxic=toxic,
            kind=kind,
            stream=stream,
            attributes=attributes,
        )

    def toxic_added(self, proxy: str, side: str, toxic: str) -> Event:
        return self._add("nemesis", "ok", Op.ADD_TOXIC, proxy=proxy, side=side, toxic=toxic)

    def toxic_removed(self, proxy: str, side: str, toxic: str) -> Event:
        return self._add("nemesis", "ok", Op.REMOVE_TOXIC, proxy=proxy, side=side, toxic=toxic)

    def proxy_set(self, proxy: str, side: str, enabled: bool) -> Event:
        return self._add("nemesis", "ok", Op.ENABLE_PROXY if enabled else Op.DISABLE_PROXY, proxy=proxy, side=side)

    def server_fault(self, **spec: Any) -> Event:
        """Account-system faults: delay_ms, e500_next, e500_guids, hold_guids, e500_once."""
        return self._add("nemesis", "ok", Op.SERVER_FAULT, **spec)

    def released(self, guids: list[str] | None) -> Event:
        return self._add("nemesis", "ok", Op.RELEASE, guids=guids)

    def tampered(self, after_step: int | str | None, changes: list[str]) -> Event:
        """Parts of the stack found changed behind the harness's back (each listed the first time it is seen)."""
        return self._add("observer", "info", Op.TAMPERED, after_step=after_step, changes=changes)

    def healed(self) -> Event:
        return self._add("nemesis", "ok", Op.HEAL)

    def killing(self, slot: str, pid: int) -> Event:
        return self._add(f"relay-{slot}", "invoke", Op.KILL, slot=slot, pid=pid)

    def killed(self, slot: str, pid: int, status: int | None) -> Event:
        return self._add(f"relay-{slot}", "ok", Op.KILL, slot=slot, pid=pid, status=status)

    # -- processes and batch runs --------------------------------------------------------
    def starting(self, slot: str, argv: list[str]) -> Event:
        return self._add(f"relay-{slot}", "invoke", Op.START, slot=slot, argv=argv)

    def started(self, slot: str, port: int, pid: int) -> Event:
        return self._add(f"relay-{slot}", "ok", Op.START, slot=slot, port=port, pid=pid)

    def start_failed(self, slot: str, error: str) -> Event:
        return self._add(f"relay-{slot}", "fail", Op.START, slot=slot, error=error)

    def batch_started(self, run: int, command: str, argument: float, argv: list[str], wall: float) -> Event:
        return self._add(
            f"batch-{run}", "invoke", command, run=run, command=command, argument=argument, argv=argv, wall=wall
        )

    def batch_ended(
        self, run: int, command: str, returncode: int | None, duration_s: float, wall: float, timed_out: bool
    ) -> Event:
        return self._add(
            f"batch-{run}",
            # exit 0 is ok; a command that failed, was killed or timed out may have done part of its work,
            # so its effect is unknown: info (Jepsen's), never fail (which would claim it did nothing)
            "ok" if returncode == 0 else "info",
            command,
            run=run,
            command=command,
            returncode=returncode,
            duration_s=duration_s,
            wall=wall,
            timed_out=timed_out,
        )

    # -- observations --------------------------------------------------------------------
    def ledger_snapshot(self, after_step: int | str | None, kind: str, rows: dict, wall: float) -> Event:
        return self._add("observer", "ok", Op.LEDGER_SNAPSHOT, after_step=after_step, kind=kind, wall=wall, rows=rows)

    def ledger_unreadable(self, after_step: int | str | None, kind: str, error: str) -> Event:
        return self._add("observer", "fail", Op.LEDGER_SNAPSHOT, after_step=after_step, kind=kind, error=error)

    def ledger_schema(
        self, columns: list[str], error: str | None, table: str | None = None, required: list[str] | None = None
    ) -> Event:
        """The ledger table's columns (or why they could not be read); `table` a PostgreSQL ledger's table, and
        `required` the columns a keyed service's [ledger] maps (absent: the contract's, §4)."""
        where: dict[str, str | list[str]] = {"table": table} if table is not None else {}
        if required is not None:
            where["required"] = required
        return self._add("observer", "ok", Op.LEDGER_SCHEMA, columns=columns, error=error, **where)

    def account_stats(self, stats: dict) -> Event:
        """The account system's own log of every call it received, and the balances: the ground truth."""
        return self._add("observer", "ok", Op.ACCOUNT_STATS, stats=stats)
