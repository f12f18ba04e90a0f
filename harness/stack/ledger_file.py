"""The one reader of a relay's ledger from outside: read-only, regular files only, never waiting on the relay.

    rows(path)                 {guid: row}, every row (or those whose GUID ends in `suffix`)
    select(path, names, query_s)   the named columns of every row, one tuple at a time (a large ledger, streamed)
    columns(path)              the ledger table's columns
    keep(path, folder, cap)    a copy of the ledger's files, for the run's record

The ledger is the relay's file, and a relay may be hostile: its path, or the -wal, -shm and
-journal files SQLite opens beside it, could be a FIFO (whose open() waits for a writer for
ever), a symbolic link to a file of the harness's, a device, or a file under a lease (whose
open() waits for the lease to break). Before SQLite opens anything, each is opened with
O_NOFOLLOW | O_NONBLOCK and fstat'ed: a regular file, free, or nothing, else LedgerFileError
(an sqlite3.DatabaseError, so that it reads as any unreadable ledger: the relay's fault,
judged from the history). `ledger` must be a table (contract section 4), not a view whose
query the relay wrote; SQLite waits at most BUSY_S for a lock, and a statement that runs
longer than QUERY_S is interrupted. (In the sandbox a relay can make none of these: its
ledger folder takes regular files only, and seccomp refuses leases.)
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlite3 import _Parameters  # typeshed's: what Connection.execute takes

BUSY_S = 2.0
QUERY_S = 2.0
SUFFIXES = ("", "-wal", "-shm", "-journal")


class LedgerFileError(sqlite3.DatabaseError):
    """A ledger file that is not a regular file: what it is, and where."""


def check(path: Path) -> bool:
    """Whether the ledger exists; LedgerFileError when it or a file beside it is not a regular file."""
    exists = False
    for suffix in SUFFIXES:
        name = f"{path}{suffix}"
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        except FileNotFoundError:
            continue
        except OSError as e:  # ELOOP: a symbolic link; ENXIO: a socket; EWOULDBLOCK: a lease; ...
            raise LedgerFileError(
                f"the ledger file {name} cannot be opened as a free regular file: {e.strerror}"
            ) from None
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        if not stat.S_ISREG(mode):
            raise LedgerFileError(f"the ledger file {name} is not a regular file ({_kind(mode)})")
        exists = exists or suffix == ""
    return exists


class _Bounded(sqlite3.Connection):
    """A connection whose every statement is interrupted once it has run `query_s` (QUERY_S unless set)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # sqlite3.connect's arguments, passed on as they are
        super().__init__(*args, **kwargs)
        self._deadline = 0.0
        self.query_s = QUERY_S
        self.set_progress_handler(lambda: time.monotonic() > self._deadline, 10_000)

    def execute(self, sql: str, parameters: _Parameters = (), /) -> sqlite3.Cursor:
        self._deadline = time.monotonic() + self.query_s
        return super().execute(sql, parameters)


def connect(path: Path) -> _Bounded:
    """A read-only connection to the ledger, after check(), whose statements are interrupted after QUERY_S and
    whose `ledger` is a table; sqlite3 errors (and LedgerFileError) propagate."""
    if not check(path):
        raise sqlite3.OperationalError(f"the ledger {path} does not exist")
    conn: _Bounded = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_S, factory=_Bounded)
    kind = conn.execute("SELECT type FROM sqlite_master WHERE name = 'ledger'").fetchone()
    if kind is not None and kind[0] != "table":
        conn.close()
        raise LedgerFileError(f"`ledger` in {path} is a {kind[0]}, not a table (contract section 4)")
    return conn


def rows(path: Path, suffix: str | None = None) -> dict[str, dict]:
    """The ledger's rows by GUID (only GUIDs ending in `suffix`, if given); {} when there is no file yet."""
    if not check(path):
        return {}
    conn = connect(path)
    try:
        conn.row_factory = sqlite3.Row
        if suffix is None:
            found = conn.execute("SELECT * FROM ledger")
        else:
            found = conn.execute("SELECT * FROM ledger WHERE substr(guid, -?) = ?", (len(suffix), suffix))
        return {r["guid"]: dict(r) for r in found}
    finally:
        conn.close()


def select(path: Path, names: tuple[str, ...], query_s: float = QUERY_S) -> Iterator[tuple]:
    """The named columns of every row of the ledger, one tuple at a time, the whole read interrupted after query_s:
    a ledger of millions of rows is streamed, never held (names are column names, quoted here)."""
    conn = connect(path)
    try:
        conn.query_s = query_s
        quoted = ", ".join('"' + n.replace('"', '""') + '"' for n in names)
        yield from conn.execute(f"SELECT {quoted} FROM ledger")
    finally:
        conn.close()


def columns(path: Path) -> list[str]:
    """The columns of the ledger table (contract section 4); [] when there is no such table."""
    conn = connect(path)
    try:
        return [r[1] for r in conn.execute("PRAGMA table_info(ledger)")]
    finally:
        conn.close()


def keep(path: Path, folder: Path, cap_bytes: int) -> Path | None:
    """Copy the ledger's regular files (at most cap_bytes in all) into `folder`; the copy's path, or None when
    there is nothing to keep (no ledger, not regular files, or larger than the cap)."""
    try:
        if not check(path):
            return None
    except LedgerFileError:
        return None
    present = [Path(f"{path}{s}") for s in SUFFIXES if os.path.lexists(f"{path}{s}")]
    if sum(p.lstat().st_size for p in present) > cap_bytes:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    for source in present:
        shutil.copyfile(source, folder / source.name, follow_symlinks=False)
    return folder / path.name


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"
