import sqlite3
import time
from contextlib import contextmanager

SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger (
  guid       TEXT PRIMARY KEY,
  status     TEXT NOT NULL,
  resp_code  TEXT,
  request    TEXT NOT NULL,
  response   TEXT,
  attempts   INTEGER NOT NULL,
  updated_at REAL NOT NULL
);
"""


class Store:
    """Thin wrapper; each public method is one committed statement."""

    def __init__(self, path: str):
        self.path = path
        with self._conn() as c:
            c.execute("PRAGMA journal_mode=WAL")
            c.executescript(SCHEMA)

    @contextmanager
    def _conn(self):
        c = sqlite3.connect(self.path, timeout=15.0, isolation_level=None)
        try:
            c.execute("PRAGMA busy_timeout=15000")
            yield c
        finally:
            c.close()

    def claim_new(self, guid: str, request_text: str) -> bool:
        with self._conn() as c:
            cur = c.execute(
                "INSERT INTO ledger (guid, status, request, attempts, updated_at) "
                "VALUES (?, 'SENT', ?, 1, ?) ON CONFLICT(guid) DO NOTHING",
                (guid, request_text, time.time()))
            return cur.rowcount == 1

    def claim_failed(self, guid: str, max_attempts: int | None = None) -> bool:
        sql = ("UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? "
               "WHERE guid=? AND status='FAILED'")
        params: list = [time.time(), guid]
        if max_attempts is not None:
            sql += " AND attempts < ?"
            params.append(max_attempts)
        with self._conn() as c:
            return c.execute(sql, params).rowcount == 1

    def record(self, guid: str, status: str, code: str, response: str) -> None:
        with self._conn() as c:
            c.execute("UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? "
                      "WHERE guid=? AND status='SENT'",
                      (status, code, response, time.time(), guid))

    def get(self, guid: str):
        with self._conn() as c:
            return c.execute("SELECT status, request, response FROM ledger WHERE guid=?",
                             (guid,)).fetchone()

    def stale(self, min_age: float):
        with self._conn() as c:
            return c.execute(
                "SELECT guid, status FROM ledger WHERE status IN ('UNKNOWN','SENT') AND updated_at <= ?",
                (time.time() - min_age,)).fetchall()

    def retryable(self, max_attempts: int):
        with self._conn() as c:
            return c.execute("SELECT guid, request FROM ledger WHERE status='FAILED' AND attempts < ?",
                             (max_attempts,)).fetchall()

    def resolve_done(self, guid, old_status, code, response):
        with self._conn() as c:
            c.execute("UPDATE ledger SET status='DONE', resp_code=?, response=?, updated_at=? "
                      "WHERE guid=? AND status=?", (code, response, time.time(), guid, old_status))

    def resolve_failed(self, guid, old_status):
        with self._conn() as c:
            c.execute("UPDATE ledger SET status='FAILED', resp_code='E902', updated_at=? "
                      "WHERE guid=? AND status=?", (time.time(), guid, old_status))

    def purge(self, retention: float) -> int:
        with self._conn() as c:
            return c.execute("DELETE FROM ledger WHERE status='DONE' AND updated_at <= ?",
                             (time.time() - retention,)).rowcount
