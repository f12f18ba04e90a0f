"""A plan's lock delay: a scenario's slow shared storage (relaychaos.sandbox.seccomp, `ledger_lock_delay_ms`).

Each record lock a relay takes or lets go with fcntl is held that long by its init before it goes on; SQLite's
locks on the ledger are such locks, so a check-then-insert's window grows from microseconds to the delay.
"""

import json

import pytest

from .test_sandbox import ROOT_ONLY
from .test_sandbox_isolation import isolated

LOCKS = (
    "import fcntl, json, os, sqlite3, threading, time\n"
    "f = open(os.environ['LEDGER_PATH'] + '.lock', 'w'); t = time.monotonic(); n = 0\n"
    "for _ in range(3):\n    fcntl.lockf(f, fcntl.LOCK_EX); fcntl.lockf(f, fcntl.LOCK_UN); n += 2\n"
    "db = sqlite3.connect(os.environ['LEDGER_PATH'], isolation_level=None); "
    "db.execute('PRAGMA journal_mode=WAL')\n"
    "db.execute('CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY)'); s = time.monotonic()\n"
    "db.execute('INSERT OR REPLACE INTO t VALUES (?)', ('x',))\n"
    "print(json.dumps([n, time.monotonic() - t, time.monotonic() - s]))\n"
)


@ROOT_ONLY
@pytest.mark.process
def test_a_plan_s_lock_delay_holds_each_file_lock_and_sqlite_s_with_them(slot):
    """A scenario's slow shared storage: each fcntl lock (taken or let go) waits lock_delay_ms in init."""
    n, took, insert = json.loads(isolated(slot, LOCKS, lock_delay_ms=50).stdout.splitlines()[-1])
    assert took >= n * 0.05 and insert >= 0.1, (n, took, insert)  # an INSERT takes and lets go of several locks
    _, took, insert = json.loads(isolated(slot, LOCKS).stdout.splitlines()[-1])
    assert took < 0.05 and insert < 0.05, "without it nothing waits"
