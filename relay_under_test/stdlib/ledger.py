"""The SQLite ledger: schema, connections and the atomic status changes.

Every statement runs in autocommit mode (isolation_level=None), so each claim
is committed by the time the call returns, before any account call is made.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

# Run as a script's sibling, it imports nothing of its own; the type checker, which takes a name TYPE_CHECKING as
# true, reads the types it names (typing itself is not imported).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .account import Transfer

    Row = dict[str, Any]  # a ledger row: column -> its value, as SQLite gives it

BUSY_TIMEOUT_MS = 5000

SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger (
  guid       TEXT PRIMARY KEY,
  status     TEXT NOT NULL,
  resp_code  TEXT,
  request    TEXT NOT NULL,
  response   TEXT,
  attempts   INTEGER NOT NULL,
  updated_at REAL NOT NULL
)
"""


def connect(path: str | None = None) -> sqlite3.Connection:
    """Open one autocommit connection with a busy timeout (one per thread/request)."""
    path = path or os.environ["LEDGER_PATH"]
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def init(path: str | None = None) -> None:
    """Create the schema and switch to WAL mode; safe to run from several processes."""
    last_error: sqlite3.OperationalError | None = None
    for _ in range(50):
        try:
            conn = connect(path)
            try:
                mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                if mode.lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(SCHEMA)
            finally:
                conn.close()
            return
        except sqlite3.OperationalError as exc:  # e.g. "database is locked"
            last_error = exc
            time.sleep(0.1)
    assert last_error is not None  # every pass that did not return set it
    raise last_error


def get(conn: sqlite3.Connection, guid: str) -> Row | None:
    """The row for guid as a dict, or None."""
    cur = conn.execute(
        "SELECT guid, status, resp_code, request, response, attempts, updated_at FROM ledger WHERE guid = ?", (guid,)
    )
    row = cur.fetchone()
    if row is None:
        return None
    keys = ("guid", "status", "resp_code", "request", "response", "attempts", "updated_at")
    return dict(zip(keys, row, strict=False))


def claim_new(conn: sqlite3.Connection, guid: str, raw_request: str) -> bool:
    """Insert a SENT row; True when this caller won the GUID."""
    cur = conn.execute(
        "INSERT INTO ledger (guid, status, resp_code, request, response, attempts, updated_at)"
        " VALUES (?, 'SENT', NULL, ?, NULL, 1, ?) ON CONFLICT(guid) DO NOTHING",
        (guid, raw_request, time.time()),
    )
    return cur.rowcount == 1


def claim_failed(conn: sqlite3.Connection, guid: str, max_attempts: int | None = None) -> bool:
    """FAILED -> SENT with attempts + 1; True when this caller won the GUID."""
    sql = (
        "UPDATE ledger SET status = 'SENT', attempts = attempts + 1, updated_at = ?"
        " WHERE guid = ? AND status = 'FAILED'"
    )
    args: list[float | str] = [time.time(), guid]
    if max_attempts is not None:
        sql += " AND attempts < ?"
        args.append(max_attempts)
    return conn.execute(sql, args).rowcount == 1


def record(
    conn: sqlite3.Connection,
    guid: str,
    status: str,
    resp_code: str | None,
    response: str | None,
    from_status: str = "SENT",
) -> bool:
    """Record the outcome of a call on a row we hold in from_status."""
    cur = conn.execute(
        "UPDATE ledger SET status = ?, resp_code = ?, response = ?, updated_at = ? WHERE guid = ? AND status = ?",
        (status, resp_code, response, time.time(), guid, from_status),
    )
    return cur.rowcount == 1


def settle(conn: sqlite3.Connection, row: Row, status: str, resp_code: str | None, response: str | None) -> bool:
    """Resolve's change: only if the row is still exactly as it was read."""
    cur = conn.execute(
        "UPDATE ledger SET status = ?, resp_code = ?, response = ?, updated_at = ?"
        " WHERE guid = ? AND status = ? AND updated_at = ?",
        (status, resp_code, response, time.time(), row["guid"], row["status"], row["updated_at"]),
    )
    return cur.rowcount == 1


def stored_transfer(raw_request: str) -> Transfer:
    """The four contract fields of a stored request body."""
    body = json.loads(raw_request)
    return {"guid": body["guid"], "from": body["from"], "to": body["to"], "amount": body["amount"]}
