"""The observer: read-only looks at the relay's ledger and the account system, recorded as observations.

It never writes the ledger (contract §6); it reads only this run's rows (their
GUIDs carry the run's tag), so runs sharing a ledger do not see each other.
"""

from __future__ import annotations

import sqlite3
import sys
import time

from relaychaos.engine import steps as S
from relaychaos.recorder import Recorder
from relaychaos.stack.ledger_file import LedgerFileError, too_many
from relaychaos.stack.world import Stack


def unreadable() -> tuple[type[Exception], ...]:
    """The errors of a ledger that cannot be read: SQLite's, and PostgreSQL's once psycopg is loaded (only a PostgreSQL
    ledger loads it, so none of its errors can be raised before; importing it costs every process 60 ms)."""
    pg = sys.modules.get("psycopg")
    return (sqlite3.Error, pg.Error) if pg is not None else (sqlite3.Error,)


ROWS_SLACK = 8  # rows a run's read may find beyond the GUIDs its channel sent


class Observer:
    """Snapshots and waits for one run; `tag` is the suffix of its GUIDs."""

    def __init__(self, stack: Stack, recorder: Recorder, tag: str):
        self.stack, self.recorder, self.tag = stack, recorder, tag
        self._tampering_seen: set[str] = set()
        self._hostile: LedgerFileError | None = None

    def rows(self) -> dict[str, dict]:
        """This run's ledger rows, by GUID (unreadable() errors propagate): no more than one a GUID the channel has
        sent, and a few (a relay that writes more makes the read an error that says so). A ledger found hostile
        once (LedgerFileError: beyond a bound, or a file no reader may open) is not read again in the run."""
        if self._hostile is not None:
            raise self._hostile
        suffix = f"-{self.tag}"
        try:
            # the channel may send while the read runs (a soak's traffic): rows of GUIDs sent by its end count too,
            # so the read may hold twice as many as were sent at its start, and is judged by those sent at its end
            rows = self.stack.ledger_rows(suffix=suffix, most=2 * len(self.recorder.guids_sent) + ROWS_SLACK)
            if len(rows) > (most := len(self.recorder.guids_sent) + ROWS_SLACK):
                where = str(self.stack.ledger_path) if self.stack.ledger_url is None else "its table"
                raise LedgerFileError(too_many(where, most, suffix))
            return rows
        except LedgerFileError as e:
            self._hostile = LedgerFileError(f"{e} (found before; the ledger is not read again in this run)")
            raise

    def rows_or_none(self) -> dict[str, dict] | None:
        """This run's rows, or None when the ledger cannot be read (the relay's fault, judged later)."""
        try:
            return self.rows()
        except unreadable():  # a missing table or column, a ledger that is not a regular file
            return None

    def snapshot(self, after_step: int | str | None, kind: str) -> None:
        """Record the run's ledger rows after a step (or that they could not be read)."""
        try:
            rows = self.rows()
        except unreadable() as e:  # a missing table or column is the relay's fault
            self.recorder.ledger_unreadable(after_step, kind, str(e))
            return
        self.recorder.ledger_snapshot(after_step, kind, rows, time.time())

    def audit(self, after_step: int | str | None) -> None:
        """Record what of the stack (toxics, proxies, the account system's faults) is no longer as the harness
        set it; each change once, when first seen."""
        new = [c for c in self.stack.audit() if c not in self._tampering_seen]
        if new:
            self._tampering_seen.update(new)
            self.recorder.tampered(after_step, new)

    def schema(self) -> None:
        """Record the ledger table's columns (contract §4; a keyed service's: with those its [ledger] maps), or why
        they could not be read."""
        read = self.stack.ledger_columns()
        self.recorder.ledger_schema(read.columns, read.error, read.table, read.required)

    def account_stats(self) -> dict:
        """Record the account system's own log of calls and the balances: the ground truth."""
        stats = self.stack.account_stats()
        self.recorder.account_stats(stats)
        return stats

    def wait_calls(self, step: S.WaitCalls, guid: str) -> bool:
        """Wait for the GUID's calls at the account system; whether they came."""
        got = self.stack.account.wait_calls(guid, step.count, step.timeout_s)
        self.recorder.waited_calls(guid, got, step.count)
        return got >= step.count

    def wait_row(self, step: S.WaitRow, guid: str) -> bool:
        """Wait for the GUID's row to show the status; whether it did."""
        deadline = time.monotonic() + step.timeout_s
        status = None
        while time.monotonic() < deadline:
            status = (self.rows_or_none() or {}).get(guid, {}).get("status")
            if status == step.status:
                break
            time.sleep(0.005)  # polling an observation, not ordering by sleep
        self.recorder.waited_row(guid, status, step.status)
        return status == step.status
