"""The ledger: one row per GUID in SQLite (WAL), claimed atomically and committed before any send.

Every method is one autocommitted statement, so a claim is decided by the
database (the affected row count), never by a read followed by a write.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger (
  guid       TEXT PRIMARY KEY,
  status     TEXT NOT NULL,
  resp_code  TEXT,
  request    TEXT NOT NULL,
  response   TEXT,
  attempts   INTEGER NOT NULL,
  updated_at REAL NOT NULL
)"""


@dataclass(frozen=True)
class Row:
    guid: str
    status: str
    resp_code: str | None
    request: str
    response: str | None
    attempts: int
    updated_at: float


class Database(Protocol):
    """What the ledger asks of its connection: one autocommitted statement at a time."""

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...


class Ledger:
    """The relay's ledger file; safe for several processes and read-only peekers at once."""

    def __init__(self, path: str):
        self.path = path
        self.db: Database = sqlite3.connect(path, timeout=1.0, isolation_level=None)
        self.db.execute("PRAGMA busy_timeout = 1000")
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: commits survive a process kill
        self.db.execute(SCHEMA)

    def get(self, guid: str) -> Row | None:
        row = self.db.execute("SELECT * FROM ledger WHERE guid = ?", (guid,)).fetchone()
        return Row(*row) if row else None

    def claim_new(self, guid: str, request: str) -> bool:
        """Insert a SENT row for a GUID never seen; True only for the one request that did."""
        cur = self.db.execute(
            "INSERT INTO ledger (guid, status, request, attempts, updated_at) VALUES (?, 'SENT', ?, 1, ?) "
            "ON CONFLICT (guid) DO NOTHING",
            (guid, request, time.time()),
        )
        return cur.rowcount == 1

    def claim_failed(self, guid: str, max_attempts: int | None = None) -> bool:
        """Move a FAILED row back to SENT (attempts + 1); True only for the one caller that did."""
        cur = self.db.execute(
            "UPDATE ledger SET status = 'SENT', attempts = attempts + 1, updated_at = ? "
            "WHERE guid = ? AND status = 'FAILED' AND (CAST(? AS INTEGER) IS NULL OR attempts < ?)",
            (time.time(), guid, max_attempts, max_attempts),
        )
        return cur.rowcount == 1

    def finish(self, guid: str, status: str, code: str, response: str | None) -> None:
        """Record the outcome of the call this process made for a SENT row it claimed."""
        self.db.execute(
            "UPDATE ledger SET status = ?, resp_code = ?, response = ?, updated_at = ? "
            "WHERE guid = ? AND status = 'SENT'",
            (status, code, response, time.time(), guid),
        )

    def settle(self, row: Row, status: str, code: str | None, response: str | None) -> bool:
        """Resolve's update: only if the row is still exactly as it was read."""
        cur = self.db.execute(
            "UPDATE ledger SET status = ?, resp_code = COALESCE(?, resp_code), response = ?, updated_at = ? "
            "WHERE guid = ? AND status = ? AND updated_at = ?",
            (status, code, response, time.time(), row.guid, row.status, row.updated_at),
        )
        return cur.rowcount == 1

    def older_than(self, statuses: tuple[str, ...], age_s: float) -> list[Row]:
        marks = ",".join("?" * len(statuses))
        rows = self.db.execute(
            f"SELECT * FROM ledger WHERE status IN ({marks}) AND updated_at <= ? ORDER BY updated_at",
            (*statuses, time.time() - age_s),
        ).fetchall()
        return [Row(*r) for r in rows]

    def failed_below(self, max_attempts: int) -> list[Row]:
        rows = self.db.execute(
            "SELECT * FROM ledger WHERE status = 'FAILED' AND attempts < ? ORDER BY updated_at", (max_attempts,)
        ).fetchall()
        return [Row(*r) for r in rows]

    def purge_done(self, retention_s: float) -> int:
        cur = self.db.execute(
            "DELETE FROM ledger WHERE status = 'DONE' AND updated_at <= ?", (time.time() - retention_s,)
        )
        return cur.rowcount


class PostgresLedger(Ledger):
    """The same ledger in PostgreSQL (the contract's table at LEDGER_URL), for relay.toml's `[ledger]
    kind = "postgresql"`: every method the same one autocommitted statement, with PostgreSQL's placeholders."""

    def __init__(self, url: str):
        import psycopg

        self.path = url
        self.db = _Placeholders(psycopg.connect(url, autocommit=True))
        self.db.execute("SELECT pg_advisory_lock(7401)")  # two relays starting at once create the table once
        try:
            self.db.execute(SCHEMA.replace("REAL", "DOUBLE PRECISION"))
        finally:
            self.db.execute("SELECT pg_advisory_unlock(7401)")


class _Placeholders:
    """A psycopg connection taking SQLite's `?` placeholders."""

    def __init__(self, conn: psycopg.Connection[TupleRow]):
        self.conn = conn

    def execute(self, sql: str, params: Any = (), /) -> Any:
        return self.conn.execute(sql.replace("?", "%s"), params)
