"""The idempotency store: one row per Idempotency-Key in PostgreSQL (table idem_requests).

States (column `state`):
  pending    a call to the PSP is claimed and may be in flight (or its caller crashed)
  completed  the PSP executed the payout; the answer given is stored and replayed
  declined   the PSP refused it (or rejected our request); the answer is stored and replayed
  in_doubt   the PSP call may or may not have executed (time-out, 5xx, broken connection)
  not_sent   the PSP certainly never received the call; safe to send again
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from paysvc import config

T = TypeVar("T")

SCHEMA_LOCK = 727_401_113  # advisory lock id: one migration at a time across instances

SCHEMA = """
CREATE TABLE IF NOT EXISTS idem_requests (
    idem_key         text        PRIMARY KEY,
    request_hash     text        NOT NULL,
    charge           jsonb       NOT NULL,
    state            text        NOT NULL
        CHECK (state IN ('pending', 'completed', 'declined', 'in_doubt', 'not_sent')),
    psp_attempts     integer     NOT NULL DEFAULT 0,
    psp_payout_id    text,
    decline_code     text,
    response_status  integer,
    response_body    bytea,
    version          bigint      NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_changed_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS idem_requests_state_changed ON idem_requests (state, last_changed_at);
"""

TERMINAL = ("completed", "declined")


@dataclass
class Row:
    idem_key: str
    request_hash: str
    charge: dict[str, Any]
    state: str
    psp_attempts: int
    version: int
    response_status: int | None
    response_body: bytes | None

    @classmethod
    def of(cls, rec: dict[str, Any]) -> "Row":
        body = rec.get("response_body")
        return cls(
            idem_key=rec["idem_key"],
            request_hash=rec["request_hash"],
            charge=rec["charge"],
            state=rec["state"],
            psp_attempts=rec["psp_attempts"],
            version=rec["version"],
            response_status=rec.get("response_status"),
            response_body=bytes(body) if body is not None else None,
        )


_COLUMNS = (
    "idem_key, request_hash, charge, state, psp_attempts, version, response_status, response_body"
)


class Store:
    def __init__(self, dsn: str, max_connections: int = 8) -> None:
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=max_connections,
            timeout=3.0,
            kwargs={
                "autocommit": True,
                "connect_timeout": 3,
                "options": "-c statement_timeout=4000 -c lock_timeout=3000",
                "row_factory": dict_row,
            },
            open=False,
        )
        self._claim_lock = threading.Lock()

    # -- life cycle ---------------------------------------------------------------------------
    def open(self, wait_s: float = 10.0) -> None:
        self._pool.open(wait=True, timeout=wait_s)
        self.migrate()

    def close(self) -> None:
        self._pool.close()

    def migrate(self) -> None:
        with self._pool.connection() as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                conn.execute(SCHEMA)

    def _run(self, fn: Callable[[psycopg.Connection], T], retries: int = 1) -> T:
        """Runs fn on a pooled connection; a broken connection is retried once on a fresh one."""
        for attempt in range(retries + 1):
            try:
                with self._pool.connection() as conn:
                    return fn(conn)
            except psycopg.OperationalError:
                if attempt >= retries:
                    raise
                time.sleep(0.05)
        raise AssertionError("unreachable")

    # -- serve --------------------------------------------------------------------------------
    def claim_new(self, key: str, request_hash: str, charge: dict[str, Any]) -> bool:
        """One INSERT that tells whether this request won the key. Not retried: a retry after a
        lost commit would see its own row and answer 409, which is safe."""
        if config.VARIANT == "m3":
            return self._claim_new_checked(key, request_hash, charge)
        def go(conn: psycopg.Connection) -> bool:
            cur = conn.execute(
                "INSERT INTO idem_requests (idem_key, request_hash, charge, state, psp_attempts)"
                " VALUES (%s, %s, %s, 'pending', 1)"
                " ON CONFLICT (idem_key) DO NOTHING RETURNING idem_key",
                (key, request_hash, json.dumps(charge)),
            )
            return cur.fetchone() is not None
        return self._run(go, retries=0)

    def _claim_new_checked(self, key: str, request_hash: str, charge: dict[str, Any]) -> bool:
        with self._claim_lock:
            def go(conn: psycopg.Connection) -> bool:
                found = conn.execute(
                    "SELECT 1 FROM idem_requests WHERE idem_key = %s", (key,)
                ).fetchone()
                if found is not None:
                    return False
                conn.execute(
                    "INSERT INTO idem_requests (idem_key, request_hash, charge, state, psp_attempts)"
                    " VALUES (%s, %s, %s, 'pending', 1) ON CONFLICT (idem_key) DO NOTHING",
                    (key, request_hash, json.dumps(charge)),
                )
                return True
            return self._run(go, retries=0)

    def get(self, key: str) -> Row | None:
        def go(conn: psycopg.Connection) -> Row | None:
            rec = conn.execute(
                f"SELECT {_COLUMNS} FROM idem_requests WHERE idem_key = %s", (key,)
            ).fetchone()
            return Row.of(rec) if rec else None
        return self._run(go)

    def reclaim_not_sent(self, key: str, max_attempts: int | None = None) -> Row | None:
        """not_sent -> pending, attempts + 1, in one conditional UPDATE; None when another
        request or batch run got there first (or the cap is reached)."""
        def go(conn: psycopg.Connection) -> Row | None:
            rec = conn.execute(
                "UPDATE idem_requests SET state = 'pending', psp_attempts = psp_attempts + 1,"
                " version = version + 1, last_changed_at = clock_timestamp()"
                " WHERE idem_key = %s AND state = 'not_sent'"
                " AND (%s::int IS NULL OR psp_attempts < %s::int)"
                f" RETURNING {_COLUMNS}",
                (key, max_attempts, max_attempts),
            ).fetchone()
            return Row.of(rec) if rec else None
        return self._run(go, retries=0)

    def force_pending(self, key: str) -> Row | None:
        def go(conn: psycopg.Connection) -> Row | None:
            rec = conn.execute(
                "UPDATE idem_requests SET state = 'pending', psp_attempts = psp_attempts + 1,"
                " version = version + 1, last_changed_at = clock_timestamp()"
                f" WHERE idem_key = %s RETURNING {_COLUMNS}",
                (key,),
            ).fetchone()
            return Row.of(rec) if rec else None
        return self._run(go, retries=0)

    def record(
        self,
        key: str,
        from_state: str,
        from_version: int,
        state: str,
        *,
        payout_id: str | None = None,
        decline_code: str | None = None,
        response_status: int | None = None,
        response_body: bytes | None = None,
    ) -> bool:
        """Moves the row from (from_state, from_version) to state; False when the row had moved on."""
        def go(conn: psycopg.Connection) -> bool:
            cur = conn.execute(
                "UPDATE idem_requests SET state = %s, psp_payout_id = COALESCE(%s, psp_payout_id),"
                " decline_code = %s, response_status = %s, response_body = %s,"
                " version = version + 1, last_changed_at = clock_timestamp()"
                " WHERE idem_key = %s AND state = %s AND version = %s",
                (state, payout_id, decline_code, response_status, response_body,
                 key, from_state, from_version),
            )
            return cur.rowcount == 1
        return self._run(go)

    # -- batch jobs ---------------------------------------------------------------------------
    def undecided_older_than(self, cutoff_epoch: float) -> list[Row]:
        def go(conn: psycopg.Connection) -> list[Row]:
            recs = conn.execute(
                f"SELECT {_COLUMNS} FROM idem_requests"
                " WHERE state IN ('pending', 'in_doubt')"
                " AND last_changed_at <= to_timestamp(%s)"
                " ORDER BY last_changed_at",
                (cutoff_epoch,),
            ).fetchall()
            return [Row.of(r) for r in recs]
        return self._run(go)

    def not_sent_below(self, max_attempts: int) -> list[Row]:
        def go(conn: psycopg.Connection) -> list[Row]:
            recs = conn.execute(
                f"SELECT {_COLUMNS} FROM idem_requests"
                " WHERE state = 'not_sent' AND psp_attempts < %s ORDER BY last_changed_at",
                (max_attempts,),
            ).fetchall()
            return [Row.of(r) for r in recs]
        return self._run(go)

    def expire(self, cutoff_epoch: float) -> int:
        if config.VARIANT == "m4":
            sql = "DELETE FROM idem_requests WHERE last_changed_at <= to_timestamp(%s)"
        else:
            sql = ("DELETE FROM idem_requests WHERE state IN ('completed', 'declined')"
                   " AND last_changed_at <= to_timestamp(%s)")
        def go(conn: psycopg.Connection) -> int:
            return conn.execute(sql, (cutoff_epoch,)).rowcount
        return self._run(go)

    # -- the variant that keeps one transaction open across the PSP call -----------------------
    def connection(self):  # type: ignore[no-untyped-def]
        return self._pool.connection()
