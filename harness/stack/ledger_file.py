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
judged from the history). `ledger` must be a plain table (contract section 4), not a view
or a virtual table whose code the relay chose; SQLite waits at most BUSY_S for a lock, and a
statement that runs longer than QUERY_S is interrupted. (In the sandbox a relay can make none
of these files: its ledger folder takes regular files only, and seccomp refuses leases.)

What the harness reads is bounded too, so that a ledger cannot make the harness spend memory
or disk the relay's own limits do not count: only the contract's columns (LEDGER_COLUMNS), by
name, so a column the relay added is never read; none of them a virtual generated column
(whose expression the reader would compute); no value over VALUE_BYTES (SQLite's length limit
on the connection), no more rows than the caller may find (a run: the GUIDs it sent, and a few),
no read of a run's rows over read_budget(); SQLite's memory held to HEAP_BYTES while it reads
(a schema of thousands of triggers would take more). The connection is read-only and
query-only, with `trusted_schema` off (no function of the relay's schema runs unless SQLite
rates it harmless). Beyond a bound, LedgerFileError names what and where.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relaychaos.contract import LEDGER_COLUMNS

if TYPE_CHECKING:
    from sqlite3 import _Parameters  # typeshed's: what Connection.execute takes

BUSY_S = 2.0
QUERY_S = 2.0
SUFFIXES = ("", "-wal", "-shm", "-journal")
VALUE_BYTES = 16 << 10  # a transfer's request and answer are under 1 KB (contract section 3)
HEAP_BYTES = 24 << 20  # SQLite's memory in the reading process: a schema that takes more (thousands of triggers)
ROWS_BYTES = 64 << 20  # one read of a run's rows: about 100,000 rows of a correct relay
ROW_BYTES = 512  # what a row costs the reader beyond its values (a dict of seven), counted against ROWS_BYTES
GENERATED_VIRTUAL = 2  # PRAGMA table_xinfo's `hidden` of a virtual generated column


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
        self.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, VALUE_BYTES)
        self.execute("PRAGMA trusted_schema = OFF")
        self.execute("PRAGMA query_only = ON")

    def execute(self, sql: str, parameters: _Parameters = (), /) -> sqlite3.Cursor:
        self._deadline = time.monotonic() + self.query_s
        return super().execute(sql, parameters)


def connect(path: Path) -> _Bounded:
    """A read-only connection to the ledger, after check(), bounded as the module says, whose `ledger` (if there
    is one yet) is a plain table; sqlite3 errors (and LedgerFileError) propagate."""
    if not check(path):
        raise sqlite3.OperationalError(f"the ledger {path} does not exist")
    conn: _Bounded = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_S, factory=_Bounded)
    try:
        kind = conn.execute("SELECT type FROM pragma_table_list WHERE schema = 'main' AND name = 'ledger'").fetchone()
        if kind is not None and kind[0] != "table":
            what = {"virtual": "virtual table", "shadow": "virtual table's shadow table"}.get(kind[0], kind[0])
            raise LedgerFileError(f"`ledger` in {path} is a {what}, not a table (contract section 4)")
    except BaseException:
        conn.close()
        raise
    return conn


def rows(path: Path, suffix: str | None = None, most: int | None = None) -> dict[str, dict]:
    """The ledger's rows by GUID (only GUIDs ending in `suffix`, if given), each with the contract's columns the
    table has; {} when there is no file yet. LedgerFileError beyond a bound: more than `most` rows, a value over
    VALUE_BYTES, rows over ROWS_BYTES in all, a contract column that is a virtual generated column."""
    if not check(path):
        return {}
    with _reading(path) as conn:
        names = _contract_columns(conn, path)
        if "guid" not in names:
            raise sqlite3.OperationalError(f"the ledger {path} has no table `ledger` with a column `guid`")
        where, args = ("", ()) if suffix is None else (" WHERE substr(guid, -?) = ?", (len(suffix), suffix))
        if most is not None:
            where, args = f"{where} LIMIT ?", (*args, most + 1)
        found: dict[str, dict] = {}
        spent, budget = 0, read_budget(most)
        try:
            for values in conn.execute(f"SELECT {_quoted(names)} FROM ledger{where}", args):
                spent += ROW_BYTES + sum(len(v) for v in values if isinstance(v, (str, bytes)))
                if spent > budget:
                    raise LedgerFileError(
                        f"the rows read from the ledger {path} hold more than {budget / 2**20:g} MiB "
                        f"by row {len(found) + 1}: the harness reads no more (a transfer's row is under 2 KB)"
                    )
                row = dict(zip(names, values, strict=True))
                found[row["guid"]] = row
                if most is not None and len(found) > most:
                    raise LedgerFileError(too_many(str(path), most, suffix))
        except sqlite3.DataError:  # SQLite's length limit: a value over VALUE_BYTES
            raise LedgerFileError(_oversized(conn, path, names, where, args)) from None
        return found


def select(path: Path, names: tuple[str, ...], query_s: float = QUERY_S) -> Iterator[tuple]:
    """The named columns of every row of the ledger, one tuple at a time, the whole read interrupted after query_s:
    a ledger of millions of rows is streamed, never held (names are column names, quoted here)."""
    with _reading(path) as conn:
        conn.query_s = query_s
        try:
            yield from conn.execute(f"SELECT {_quoted(names)} FROM ledger")
        except sqlite3.DataError:
            raise LedgerFileError(_oversized(conn, path, names, "", ())) from None


def columns(path: Path) -> list[str]:
    """The columns of the ledger table (contract section 4); [] when there is no such table."""
    with _reading(path) as conn:
        return [r[1] for r in conn.execute("PRAGMA table_info(ledger)")]


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[_Bounded]:
    """connect(path) for one read that may take at most HEAP_BYTES of SQLite's memory beyond what the process's other
    SQLite work holds (the heap limit is the process's: set for the read and put back as it was after it)."""
    used, limit = _heap()
    before = limit(-1)
    allowed = used() + HEAP_BYTES
    limit(allowed if before <= 0 else min(before, allowed))
    try:
        conn = connect(path)
        try:
            yield conn
        finally:
            conn.close()
    except MemoryError:  # SQLITE_NOMEM at the limit: the values are bounded, so the schema is what takes it
        raise LedgerFileError(
            f"the ledger {path}'s schema takes more than {HEAP_BYTES >> 20} MiB of memory to read (its tables, "
            "indexes and triggers): the harness reads no more"
        ) from None
    finally:
        limit(before)


@functools.cache
def _heap() -> tuple[Callable[[], int], Callable[[int], int]]:
    """(sqlite3_memory_used, sqlite3_hard_heap_limit64) of the SQLite Python's sqlite3 module runs on (the shared
    library it is linked to); where that cannot be reached, (nothing used, the pragma), whose limit holds for the
    rest of the process."""
    try:
        lib = ctypes.CDLL("libsqlite3.so.0")
        lib.sqlite3_hard_heap_limit64.restype = lib.sqlite3_memory_used.restype = ctypes.c_int64
        lib.sqlite3_hard_heap_limit64.argtypes = [ctypes.c_int64]
        said = lib.sqlite3_hard_heap_limit64
        before, mark = said(-1), int(lib.sqlite3_memory_used()) + HEAP_BYTES + 1  # a limit no one else would set
        said(mark)
        try:
            with contextlib.closing(sqlite3.connect(":memory:")) as probe:
                shared = probe.execute("PRAGMA hard_heap_limit").fetchone()[0] == mark
        finally:
            said(before)
        if shared:
            return (lambda: int(lib.sqlite3_memory_used())), (lambda n: int(said(n)))
    except (OSError, AttributeError):
        pass

    def pragma(n: int) -> int:
        with contextlib.closing(sqlite3.connect(":memory:")) as conn:
            return int(
                conn.execute(f"PRAGMA hard_heap_limit = {n}" if n >= 0 else "PRAGMA hard_heap_limit").fetchone()[0]
            )

    return (lambda: 0), pragma


def read_budget(most: int | None) -> int:
    """The bytes one read of rows may hold: ROWS_BYTES, and 2 KiB more a row it may find (a transfer's is under)."""
    return ROWS_BYTES + (most or 0) * (2 << 10)


def too_many(where: str, most: int, suffix: str | None) -> str:
    """The error of a read that found more rows than it may (`most`: the GUIDs the run sent, and a few)."""
    mine = f" whose GUID ends in this run's tag ({suffix})" if suffix else ""
    return (
        f"the ledger {where} holds more than {most} rows{mine}: more than the channel sent GUIDs in this run, "
        "so the harness reads no more (one row per GUID, contract section 4)"
    )


def _contract_columns(conn: _Bounded, path: Path) -> list[str]:
    """The contract's columns the ledger table has, in the contract's order; LedgerFileError when one of them is a
    virtual generated column (its expression, the relay's, would run in the reader at every read)."""
    found = {r[1]: r[6] for r in conn.execute("PRAGMA table_xinfo(ledger)")}
    computed = [c for c in LEDGER_COLUMNS if found.get(c) == GENERATED_VIRTUAL]
    if computed:
        raise LedgerFileError(
            f"the ledger {path}'s column {', '.join(computed)} is a virtual generated column: the contract's columns "
            "hold what the relay wrote (contract section 4), which the harness reads without running the relay's code"
        )
    return [c for c in LEDGER_COLUMNS if c in found]


def _oversized(conn: _Bounded, path: Path, names: Sequence[str], where: str, args: tuple) -> str:
    """Which column of the read holds a value over VALUE_BYTES: the first whose lengths cannot all be read under the
    limit (a text's length is read through its value, a blob's from its header: never the whole value kept)."""
    said = f"the harness reads values up to {VALUE_BYTES >> 10} KiB (a transfer's is under 1 KB)"
    for name in names:
        try:
            longest = conn.execute(f"SELECT max(length({_quoted([name])})) FROM ledger{where}", args).fetchone()[0]
        except sqlite3.DataError:
            return f"the ledger {path} holds a value over {VALUE_BYTES >> 10} KiB in column `{name}`: {said}"
        except sqlite3.Error as e:
            return f"the ledger {path} holds a value over {VALUE_BYTES >> 10} KiB; its column could not be read: {e}"
        if longest is not None and longest > VALUE_BYTES:
            return f"the ledger {path} holds a value of {longest:,} bytes in column `{name}`: {said}"
    return f"the ledger {path} holds a value over {VALUE_BYTES >> 10} KiB (SQLite's length limit on the reader): {said}"


def _quoted(names: Sequence[str]) -> str:
    return ", ".join('"' + n.replace('"', '""') + '"' for n in names)


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
