"""Red team, class 6: a trap at LEDGER_PATH for whoever reads the ledger (the harness, the account system).

The file-type traps, each meant to make a reader wait for ever or read something else: a FIFO, a symbolic link
to /dev/zero, a Unix socket and a device node at the ledger's -wal/-shm/-journal, a FIFO made in /tmp then
linked or renamed in, a FIFO in a folder made inside the ledger's folder.

And a trap no file check can see: the ledger is an ordinary SQLite file whose `ledger` is a VIEW (its rows are
in `ledger_rows`, where this relay reads and writes). For 25 s after the second serve of a stack starts (a
restart, or a second relay: the scenarios that have one), the view
runs a recursive CTE costing ~20 s per query before it answers the right rows: every snapshot the harness takes
and every peek the account system makes waits on it (with an unbounded CTE, for ever). The relay sees a reader
stuck in the view by the lock SQLite readers hold in the -shm file while they read.
"""

import fcntl  # noqa: I001
import os
import re
import socket
import sqlite3
import stat
import struct
import sys
import time

from .evidence import Attack, describe, emit, first_time, is_serve, ledger_dir, scratch, whoami
from .reference.__main__ import main
from .reference.ledger import SCHEMA, Ledger

NAME = "ledger_trap"
ATTEMPTS = ("fifo", "symlink", "socket", "device", "hardlink", "rename", "fifo-in-subfolder", "sql-view")
A = Attack(NAME)
ARMED_S, TARGET_S, STUCK_S, SHORT_READS = 25.0, 20.0, 2.5, 5
FAST_VIEW = "CREATE VIEW ledger AS SELECT * FROM ledger_rows"
SLOW_VIEW = (
    "CREATE VIEW ledger AS SELECT * FROM ledger_rows WHERE (SELECT count(*) FROM (WITH RECURSIVE c(x) AS "
    "(SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) SELECT x FROM c)) > 0"
)
READ_LOCKS = (123, 5)  # the -shm bytes WAL readers lock while they read (WALINDEX_LOCK_OFFSET 120 + 3, 5 marks)


class RowsLedger(Ledger):
    """The reference ledger, kept in `ledger_rows`; `ledger` is a view over it for everyone else."""

    def __init__(self, path: str):
        self.path = path
        self.raw = sqlite3.connect(path, timeout=5.0, isolation_level=None)
        self.raw.execute("PRAGMA busy_timeout = 5000")
        self.raw.execute("PRAGMA journal_mode = WAL")
        self.raw.execute("PRAGMA synchronous = NORMAL")
        self.raw.execute(own_sql(SCHEMA))
        try:
            self.raw.execute(FAST_VIEW)
        except sqlite3.OperationalError:  # made already by another of this relay's commands
            pass
        self.db = self

    def execute(self, sql: str, params=()):
        if os.path.exists(marker("armed-at")):  # the harness sent more work after the view was armed
            os.close(os.open(marker("work-after-arming"), os.O_CREAT | os.O_WRONLY, 0o600))
        return self.raw.execute(own_sql(sql), params)


def own_sql(sql: str) -> str:
    return re.sub(r"\bledger\b", "ledger_rows", sql)


# -- the file traps ----------------------------------------------------------------------------------
def gone(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def made(path: str, what: str) -> str:
    kind = stat.S_IFMT(os.lstat(path).st_mode)
    gone(path)
    return f"made {what} at {path} (mode {kind:#o})"


def fifo():
    path = os.environ["LEDGER_PATH"] + "-wal"
    os.mkfifo(path)
    return made(path, "a FIFO")


def symlink():
    path = os.environ["LEDGER_PATH"] + "-shm"
    os.symlink("/dev/zero", path)
    return made(path, "a link to /dev/zero")


def unix_socket():
    path = os.environ["LEDGER_PATH"] + "-journal"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(path)
    finally:
        s.close()
    return made(path, "a socket")


def device():
    path = os.environ["LEDGER_PATH"] + "-journal"
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    return made(path, "/dev/zero's device node")


def outside_fifo() -> str:
    path = "/tmp/red-team-fifo"
    gone(path)
    os.mkfifo(path)
    return path


def hardlink():
    source, path = outside_fifo(), os.environ["LEDGER_PATH"] + "-wal"
    try:
        os.link(source, path)
    finally:
        gone(source)
    return made(path, "a hard link to a FIFO")


def rename():
    source, path = outside_fifo(), os.environ["LEDGER_PATH"] + "-wal"
    try:
        os.rename(source, path)
    finally:
        gone(source)
    return made(path, "a FIFO moved in")


def fifo_in_subfolder():
    folder = os.path.join(ledger_dir(), "red-team-sub")
    os.makedirs(folder, exist_ok=True)
    try:
        os.mkfifo(os.path.join(folder, "ledger.sqlite"))
        return made(os.path.join(folder, "ledger.sqlite"), "a FIFO in a folder of the ledger's")
    finally:
        gone(folder)


# -- the view ----------------------------------------------------------------------------------------
def cost_of(db: sqlite3.Connection, n: int) -> float:
    started = time.perf_counter()
    db.execute(
        f"SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) "
        "SELECT x FROM c)"
    ).fetchone()
    return time.perf_counter() - started


def define(db: sqlite3.Connection, view: str) -> None:
    db.execute("BEGIN IMMEDIATE")
    db.execute("DROP VIEW IF EXISTS ledger")
    db.execute(view)
    db.execute("COMMIT")


def readers_now(shm_fd: int) -> bool:
    """Whether a process other than this one holds a WAL read lock (it is inside a read)."""
    probe = struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK, os.SEEK_SET, READ_LOCKS[0], READ_LOCKS[1], 0)
    got = fcntl.fcntl(shm_fd, fcntl.F_GETLK, probe)
    return struct.unpack("hhxxxxqqixxxx", got)[0] != fcntl.F_UNLCK


def marker(name: str) -> str:
    return scratch(f"rt-view-{name}")


def sql_view() -> None:
    """Arm the slow view (once per stack), watch for a reader held inside it, disarm it ARMED_S after arming.
    Every serve of the stack watches while it lives (the one that armed it may be killed)."""
    db = sqlite3.connect(os.environ["LEDGER_PATH"], timeout=10.0, isolation_level=None)
    if first_time("view-armed"):
        n = int(1_000_000 * TARGET_S / max(cost_of(db, 1_000_000), 1e-3))
        define(db, SLOW_VIEW.format(n=n))
        with open(marker("armed-at.tmp"), "w") as f:  # renamed whole: another process may read it at once
            f.write(str(time.time()))
        os.replace(marker("armed-at.tmp"), marker("armed-at"))
        emit(f"{NAME}: the ledger's `ledger` is now a view costing ~{TARGET_S:g} s per query ({n} steps)")
    for _ in range(100):
        if os.path.exists(marker("armed-at")):
            break
        time.sleep(0.1)
    deadline = float(open(marker("armed-at")).read()) + ARMED_S
    shm = os.open(os.environ["LEDGER_PATH"] + "-shm", os.O_RDWR)
    longest, since, reads = 0.0, None, 0
    try:
        while time.time() < deadline:
            if readers_now(shm):
                since = since or time.monotonic()
                longest = max(longest, time.monotonic() - since)
            elif since is not None:
                since, reads = None, reads + 1
            if longest >= STUCK_S and first_time("view-said"):
                A.achieved(
                    "sql-view",
                    f"a reader of the ledger (the harness's snapshot or the account system's "
                    f"peek) was held {longest:.1f} s inside the ledger's view (SQLite's busy limit "
                    f"is 2 s; with an unbounded CTE it would wait for ever)",
                )
            went_on = os.path.exists(marker("work-after-arming"))  # its next step came: nobody waited in the view
            if (reads >= SHORT_READS or went_on) and longest < STUCK_S and first_time("view-said"):
                A.refused(
                    "sql-view",
                    f"the harness went on with its steps while the view was armed ({reads} reads "
                    f"seen, the longest {longest:.2f} s): no reader waits on the view",
                )
            time.sleep(0.005)
    finally:
        os.close(shm)
    if first_time("view-disarmed"):
        define(db, FAST_VIEW)
        if first_time("view-said"):
            A.refused("sql-view", f"no reader stayed in the view longer than {longest:.1f} s in {ARMED_S:g} s")
    db.close()


def file_traps() -> None:
    """Before serve opens the ledger (the names are free): each trap at the names its readers open."""
    for attempt, fn in (
        ("fifo", fifo),
        ("symlink", symlink),
        ("socket", unix_socket),
        ("device", device),
        ("hardlink", hardlink),
        ("rename", rename),
        ("fifo-in-subfolder", fifo_in_subfolder),
    ):
        A.run(attempt, fn)


def view_attack() -> None:
    time.sleep(0.5)  # serve's ledger is open (WAL, -shm made) by now
    try:
        sql_view()  # says "sql-view" itself
    except (OSError, sqlite3.Error) as e:
        A.refused("sql-view", f"could not arm the view: {describe(e)}")


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]):
        if first_time(NAME):
            if not os.path.exists(os.environ["LEDGER_PATH"]):
                file_traps()
        else:
            A.background(view_attack)
    sys.exit(main(sys.argv[1:], ledger_cls=RowsLedger))
