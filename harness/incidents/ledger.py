"""The relay's ledger as it was after the incident: a SQLite file, or a CSV dump of the table (psql `\\copy`).

    for guid, word in read(source): ...      # word: "DONE 0000 after 2 attempt(s)"

Both give the contract's table (section 4). A CSV dump has a header line (`COPY ledger TO
... CSV HEADER`, `\\copy ledger to 'ledger.csv' csv header`); its columns can be mapped in
[logs.ledger] fields like any log's. The ledger is what the comments of the scenario cite
as the relay's last word on each GUID: only that word is kept (one string for every GUID
that ended alike); a GUID's last row gives it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

from relaychaos.contract import LEDGER_COLUMNS
from relaychaos.incidents.mapping import BundleError, Source
from relaychaos.incidents.readers import Skipped, rows
from relaychaos.stack import ledger_file

WORDS = ("guid", "status", "resp_code", "attempts")  # the columns the last word on a GUID is made of
READ_S = 600.0  # a production ledger of millions of rows is read in seconds; a read that takes longer is stopped


def read(source: Source) -> Iterator[tuple[str, str]]:
    """(GUID, the ledger's last word on it) of every row of the ledger file(s), in their order."""
    words: dict[str, str] = {}
    found = (
        (r for path in source.files for r in _sqlite(path))
        if source.format == "sqlite"
        else (fields for _, _, fields in rows(source, Skipped()))
    )
    for row in found:
        guid = str(row["guid"]).strip()
        word = " ".join(
            str(x)
            for x in (row.get("status"), row.get("resp_code") or "", "after", row.get("attempts"), "attempt(s)")
            if x != ""
        )
        yield guid, words.setdefault(word, word)


def _sqlite(path: Path) -> Iterator[dict[str, object]]:
    """The rows of the ledger table, one dict of WORDS at a time, streamed (a production ledger may hold millions),
    read as the harness reads a relay's (stack.ledger_file) but given READ_S for the whole read."""
    try:
        missing = [c for c in LEDGER_COLUMNS if c not in ledger_file.columns(path)]
        if missing:
            raise BundleError(
                f"no table `ledger` with the contract's columns (missing: {', '.join(missing)})",
                where=str(path),
                fix="give the relay's ledger file as it is (contract section 4), "
                "a CSV dump of the table, or leave it out",
            )
        for guid, status, code, attempts in ledger_file.select(path, WORDS, READ_S):
            yield {"guid": guid, "status": status, "resp_code": code, "attempts": attempts}
    except sqlite3.OperationalError as e:
        if str(e) != "interrupted":
            raise _unreadable(path, e) from None
        raise BundleError(
            f"reading the ledger took over {READ_S:g} s, and was stopped",
            where=str(path),
            fix="give a CSV dump of the table (`\\copy ledger to 'ledger.csv' csv header`), or leave the ledger out",
        ) from None
    except sqlite3.DatabaseError as e:
        raise _unreadable(path, e) from None


def _unreadable(path: Path, e: sqlite3.DatabaseError) -> BundleError:
    return BundleError(
        f"not a SQLite database: {e}",
        where=str(path),
        fix="give the relay's ledger file as it is (copy it with `sqlite3 LEDGER '.backup "
        "ledger.sqlite'`), or a CSV dump with a header (name it ledger.csv)",
    )
