"""The one reader of a relay's ledger from outside (relaychaos.stack.ledger_file): it never waits on the relay's files,
and what it reads is bounded: only the contract's columns, none computed by the relay's code, no value over 16 KiB,
no read over 64 MiB. Beyond a bound, LedgerFileError names what and where."""

import os
import re
import sqlite3
import time

import pytest

from relaychaos.stack import ledger_file


@pytest.mark.slow
def test_a_ledger_that_is_a_view_or_a_slow_query_is_unreadable_at_once(tmp_path):

    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE VIEW ledger AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
            "SELECT i AS guid FROM r"
        )
    with pytest.raises(ledger_file.LedgerFileError, match="is a view, not a table"):
        ledger_file.rows(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP VIEW ledger")
        conn.execute("CREATE TABLE ledger (guid TEXT PRIMARY KEY)")
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        ledger_file.connect(path).execute(
            "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
        ).fetchone()
    assert time.monotonic() - started < ledger_file.QUERY_S + 1


def test_select_streams_the_named_columns_of_every_row_and_is_bounded_by_the_time_it_is_given(tmp_path):
    """An incident bundle's ledger may hold millions of rows: read a tuple at a time, only the columns asked."""

    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE ledger (guid TEXT PRIMARY KEY, status TEXT, "odd""name" TEXT, request TEXT)')
        conn.executemany("INSERT INTO ledger VALUES (?, ?, ?, ?)", [(f"g{n}", "DONE", "x", "{}") for n in range(3000)])
    rows = ledger_file.select(path, ("guid", 'odd"name'))
    assert next(rows) == ("g0", "x")
    assert sum(1 for _ in rows) == 2999
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        list(ledger_file.select(path, ("guid", "status"), query_s=-1.0))


LEDGER = (
    "guid TEXT PRIMARY KEY, status TEXT NOT NULL, resp_code TEXT, request TEXT NOT NULL, response TEXT, "
    "attempts INTEGER NOT NULL, updated_at REAL NOT NULL"
)


def test_the_harness_reads_only_the_contracts_columns_so_a_column_the_relay_added_costs_it_nothing(tmp_path):

    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE ledger ({LEDGER}, pad BLOB GENERATED ALWAYS AS (zeroblob(1000000000)) VIRTUAL)")
        conn.execute(
            "INSERT INTO ledger (guid, status, request, attempts, updated_at) VALUES ('g-t1', 'DONE', '{}', 1, 2)"
        )
    assert ledger_file.rows(path) == {
        "g-t1": {
            "guid": "g-t1",
            "status": "DONE",
            "resp_code": None,
            "request": "{}",
            "response": None,
            "attempts": 1,
            "updated_at": 2.0,
        }
    }


@pytest.mark.parametrize(
    "table, row, said",
    [
        (LEDGER, "'DONE', '0000', hex(zeroblob(40000)), '{}'", "holds a value over 16 KiB in column `request`"),
        (LEDGER, "'DONE', '0000', '{}', zeroblob(100000)", "holds a value of 100,000 bytes in column `response`"),
        (
            LEDGER.replace("response TEXT", "response TEXT GENERATED ALWAYS AS (hex(zeroblob(10))) VIRTUAL"),
            "'DONE', '0000', '{}'",
            "column response is a virtual generated column",
        ),
    ],
    ids=["text-over-the-bound", "blob-over-the-bound", "generated-contract-column"],
)
def test_a_value_over_the_bound_or_computed_by_the_relays_code_is_never_read_and_the_error_names_it(
    tmp_path, table, row, said
):

    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE ledger ({table})")
        columns = "guid, status, resp_code, request" + (", response" if row.count(",") == 3 else "")
        conn.execute(f"INSERT INTO ledger ({columns}, attempts, updated_at) VALUES ('g-t1', {row}, 1, 2)")
    with pytest.raises(ledger_file.LedgerFileError, match=re.escape(said)):
        ledger_file.rows(path, "-t1")


def test_a_read_of_more_rows_than_the_bound_stops_and_says_so(tmp_path, monkeypatch):

    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE ledger ({LEDGER})")
        conn.executemany(
            "INSERT INTO ledger VALUES (?, 'DONE', '0000', ?, '{}', 1, 2)", [(f"g{n}-t1", "x" * 900) for n in range(50)]
        )
    monkeypatch.setattr(ledger_file, "ROWS_BYTES", 2**14)
    with pytest.raises(ledger_file.LedgerFileError, match="hold more than 0.015625 MiB by row 12:"):
        ledger_file.rows(path, "-t1")


def test_a_ledger_file_that_is_a_fifo_is_never_opened(tmp_path):
    os.mkfifo(tmp_path / "ledger.sqlite-journal")
    (tmp_path / "ledger.sqlite").touch()
    with pytest.raises(ledger_file.LedgerFileError, match="ledger.sqlite-journal is not a regular file"):
        ledger_file.rows(tmp_path / "ledger.sqlite")


def test_a_read_finds_at_most_the_rows_it_may_and_says_when_there_are_more(tmp_path):
    """A run's read may find one row a GUID its channel sent, and a few: a relay's extra rows are never held."""
    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE ledger ({LEDGER})")
        conn.executemany(
            "INSERT INTO ledger VALUES (?, 'DONE', '0000', '{}', '{}', 1, 2)", [(f"g{n}-t1",) for n in range(40)]
        )
    assert len(ledger_file.rows(path, "-t1", most=40)) == 40
    with pytest.raises(ledger_file.LedgerFileError, match=r"holds more than 11 rows whose GUID ends in this run's tag"):
        ledger_file.rows(path, "-t1", most=11)


def test_a_schema_too_large_to_read_is_named_and_the_process_s_sqlite_is_not_held_after(tmp_path):
    """3,000 triggers of 400 constants (a few MiB on disk) take SQLite over HEAP_BYTES to read: named, and the heap
    limit is the process's only while the harness reads."""
    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute(f"CREATE TABLE ledger ({LEDGER})")
        conn.execute("CREATE TABLE side (x INTEGER)")
        conn.execute("BEGIN")
        for n in range(3000):
            conn.execute(f"CREATE TRIGGER t{n} AFTER INSERT ON side BEGIN SELECT 1 IN ({','.join(['1'] * 400)}); END")
        conn.execute("COMMIT")
    with pytest.raises(ledger_file.LedgerFileError, match="schema takes more than 24 MiB of memory to read"):
        ledger_file.rows(path, "-t1")
    with sqlite3.connect(":memory:") as conn:
        assert conn.execute("PRAGMA hard_heap_limit").fetchone() == (0,)


def test_a_read_beside_the_process_s_other_sqlite_work_is_held_to_its_own_share(tmp_path):
    """The heap limit is the process's: a read may take HEAP_BYTES beyond what the rest of the process holds (here a
    database of 50 MB in memory, as a user's own test might keep), and that work goes on after it."""
    other = sqlite3.connect(":memory:")
    other.execute("PRAGMA cache_size = -60000")
    other.execute("CREATE TABLE t (x BLOB)")
    other.executemany("INSERT INTO t VALUES (?)", ((b"x" * 1000,) for _ in range(50_000)))
    path = tmp_path / "ledger.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE ledger ({LEDGER})")
        conn.execute("INSERT INTO ledger VALUES ('g-t1', 'DONE', '0000', '{}', '{}', 1, 2)")
    assert list(ledger_file.rows(path, "-t1", most=1)) == ["g-t1"]
    other.executemany("INSERT INTO t VALUES (?)", ((b"y" * 1000,) for _ in range(1_000)))
    assert other.execute("SELECT count(*) FROM t").fetchone() == (51_000,)
    other.close()
