"""The relay's ledger as it was after the incident: a SQLite file, or a CSV dump of the table (psql `\\copy`).

    words = read(source, strings)      # guid -> "DONE 0000 after 2 attempt(s)"

Both give the contract's table (section 4). A CSV dump has a header line (`COPY ledger TO
... CSV HEADER`, `\\copy ledger to 'ledger.csv' csv header`); its columns can be mapped in
[logs.ledger] fields like any log's. The ledger is what the comments of the scenario cite
as the relay's last word on each GUID: only that word is kept (one string for every GUID
that ended alike), with the GUID string of the logs (`strings`).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from relaychaos.incidents.mapping import BundleError, Source
from relaychaos.incidents.readers import Skipped, rows


CONTRACT_COLUMNS = ("guid", "status", "resp_code", "request", "response", "attempts", "updated_at")


def read(source: Source, strings: dict[str, str]) -> dict[str, str]:
    """The ledger's last word on every GUID of the ledger file(s)."""
    out: dict[str, str] = {}
    words: dict[str, str] = {}
    found = (r for path in source.files for r in _sqlite(path)) if source.format == "sqlite" else (
        fields for _, _, fields in rows(source, Skipped()))
    for row in found:
        guid = str(row["guid"]).strip()
        word = " ".join(str(x) for x in (row.get("status"), row.get("resp_code") or "", "after", row.get("attempts"),
                                           "attempt(s)") if x != "")
        out[strings.get(guid, guid)] = words.setdefault(word, word)
    return out


def _sqlite(path: Path):
    """The rows of the ledger table, one dict at a time."""
    columns = CONTRACT_COLUMNS
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            cols = [r[1] for r in conn.execute("PRAGMA table_info(ledger)")]
            missing = [c for c in columns if c not in cols]
            if missing:
                raise BundleError(f"no table `ledger` with the contract's columns (missing: {', '.join(missing)})",
                                  where=str(path), fix="give the relay's ledger file as it is (contract section 4), "
                                                       "a CSV dump of the table, or leave it out")
            conn.row_factory = sqlite3.Row
            for r in conn.execute("SELECT guid, status, resp_code, attempts FROM ledger"):
                yield dict(r)
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        raise BundleError(f"not a SQLite database: {e}", where=str(path),
                          fix="give the relay's ledger file as it is (copy it with `sqlite3 LEDGER '.backup "
                              "ledger.sqlite'`), or a CSV dump with a header (name it ledger.csv)") from None
