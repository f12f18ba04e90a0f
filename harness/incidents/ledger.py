"""The relay's ledger as it was after the incident: a SQLite file, or a CSV dump of the table (psql `\\copy`).

    rows = read(source)        # guid -> {status, resp_code, attempts, ...}

Both give the contract's table (section 4). A CSV dump has a header line (`COPY ledger TO
... CSV HEADER`, `\\copy ledger to 'ledger.csv' csv header`); its columns can be mapped in
[logs.ledger] fields like any log's. The ledger is what the comments of the scenario cite
as the relay's last word on each GUID.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from relaychaos.incidents.mapping import REQUIRED, BundleError, Source
from relaychaos.incidents.readers import Skipped, rows


def read(source: Source) -> dict[str, dict]:
    """Every row of the ledger file(s), by GUID."""
    out: dict[str, dict] = {}
    for path in source.files:
        if source.format == "sqlite":
            out.update(_sqlite(path))
    if source.format == "csv":
        for row in rows(source, Skipped()):
            out[str(row.fields["guid"]).strip()] = dict(row.fields)
    return out


def _sqlite(path: Path) -> dict[str, dict]:
    columns = REQUIRED["ledger"]
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
            return {r["guid"]: dict(r) for r in conn.execute("SELECT * FROM ledger")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        raise BundleError(f"not a SQLite database: {e}", where=str(path),
                          fix="give the relay's ledger file as it is (copy it with `sqlite3 LEDGER '.backup "
                              "ledger.sqlite'`), or a CSV dump with a header (name it ledger.csv)") from None
