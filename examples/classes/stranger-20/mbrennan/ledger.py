# Ledger access for the relay. One sqlite3 connection per thread, autocommit
# mode, every state change is a single guarded statement.
import sqlite3
import threading
import time

_local = threading.local()

DDL = """CREATE TABLE IF NOT EXISTS ledger (
  guid       TEXT PRIMARY KEY,
  status     TEXT NOT NULL,
  resp_code  TEXT,
  request    TEXT NOT NULL,
  response   TEXT,
  attempts   INTEGER NOT NULL,
  updated_at REAL NOT NULL
)"""


class Ledger:
    def __init__(self, path):
        self.path = path
        self.conn()  # create schema now

    def conn(self):
        c = getattr(_local, "c", None)
        if c is None:
            c = sqlite3.connect(self.path, timeout=15, isolation_level=None, check_same_thread=False)
            c.execute("PRAGMA busy_timeout = 15000")
            try:
                if c.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    c.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError:
                pass
            c.execute(DDL)
            _local.c = c
        return c

    def row(self, guid):
        r = self.conn().execute(
            "SELECT status, resp_code, request, response, attempts FROM ledger WHERE guid = ?",
            (guid,)).fetchone()
        if r is None:
            return None
        return dict(zip(("status", "resp_code", "request", "response", "attempts"), r))

    def try_insert_sent(self, guid, request_text):
        """True only for the one caller whose insert created the row."""
        cur = self.conn().execute(
            "INSERT INTO ledger(guid, status, request, attempts, updated_at) "
            "VALUES (?, 'SENT', ?, 1, ?) ON CONFLICT (guid) DO NOTHING",
            (guid, request_text, time.time()))
        return cur.rowcount == 1

    def try_reclaim(self, guid, below=None):
        q = "UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? WHERE guid=? AND status='FAILED'"
        p = [time.time(), guid]
        if below is not None:
            q += " AND attempts < ?"
            p.append(below)
        return self.conn().execute(q, p).rowcount == 1

    def settle(self, guid, status, code, response):
        self.conn().execute(
            "UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? WHERE guid=? AND status='SENT'",
            (status, code, response, time.time(), guid))
