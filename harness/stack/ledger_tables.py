"""Read-only looks at a relay's ledger table, wherever it keeps it: its rows by GUID in the contract's words, and
its columns.

    rows(profile, ledger_path, ledger_url, suffix)   # {guid: {"status": "DONE", "updated_at": ..., ...}}
    columns(profile, ledger_path, ledger_url)        # LedgerColumns(["guid", "status", ...], None, ...)

The SQLite file (relaychaos.stack.ledger_file) and a course relay's table in PostgreSQL hold the contract's
columns (§4); a keyed service's own table is read through relay.toml's [ledger] mapping: its key, its status
in the contract's words, and the columns it maps (a row's last change, its attempts, its saved answer).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from relaychaos.stack import ledger_file
from relaychaos.stack import postgres as postgres_checks
from relaychaos.stack.api_profile import Ledger, Profile


@dataclass(frozen=True)
class LedgerColumns:
    """The columns of the ledger's table as the harness read them: `table` the PostgreSQL table (None: the
    SQLite file's `ledger`), `required` the columns a keyed service's [ledger] maps (None: the contract's)."""

    columns: list[str]
    error: str | None = None  # why the table could not be read
    table: str | None = None
    required: list[str] | None = None


def rows(
    profile: Profile, ledger_path: Path, ledger_url: str | None, suffix: str | None, most: int | None = None
) -> dict[str, dict]:
    """The ledger's rows by GUID (only GUIDs ending in `suffix`, if given; more than `most` of them is an error that
    says so): the SQLite file's, or a course relay's contract table in PostgreSQL; of a keyed service's own table,
    each key's row as `contract_row` reads it. sqlite3.Error or psycopg.Error when it cannot be read."""
    if ledger_url is None:
        return ledger_file.rows(ledger_path, suffix, most)
    ledger = profile.ledger
    if profile.name != "course":  # a service's own table: the columns mapped, in the contract's words
        keyed = postgres_checks.rows(ledger_url, ledger.table, ledger.key, suffix, ledger.columns, most)
        return {k: contract_row(ledger, k, r) for k, r in keyed.items()}
    found = postgres_checks.rows(ledger_url, ledger.table, ledger.key, suffix, most=most)
    for row in found.values():
        row["status"] = ledger.contract_status(row.get(ledger.status))
    return found


def contract_row(ledger: Ledger, key: str, row: dict) -> dict:
    """A service's row as the contract's: its status in the contract's words, its time in epoch seconds, its
    attempts and its saved answer's HTTP status (`answer`), where [ledger] maps them and the row holds them."""
    out: dict = {"guid": key, "status": ledger.contract_status(row.get(ledger.status))}
    when = row.get(ledger.updated_at) if ledger.updated_at else None
    if when is not None:
        out["updated_at"] = when.timestamp() if hasattr(when, "timestamp") else float(when)
    for name, column in (("attempts", ledger.attempts), ("answer", ledger.answer)):
        if column and row.get(column) is not None:
            out[name] = int(row[column])
    return out


def columns(profile: Profile, ledger_path: Path, ledger_url: str | None) -> LedgerColumns:
    """The ledger table's columns: the SQLite file's, or the PostgreSQL table's, with those a keyed service's
    [ledger] maps (each must be there); none, and why, when the table cannot be read."""
    if ledger_url is None:
        try:
            return LedgerColumns(ledger_file.columns(ledger_path))
        except sqlite3.Error as e:
            return LedgerColumns([], str(e))
    import psycopg  # lazy: only a PostgreSQL ledger needs psycopg

    table = profile.ledger.table
    mapped = list(profile.ledger.columns) if profile.name != "course" else None
    try:
        return LedgerColumns(postgres_checks.columns(ledger_url, table), None, table, mapped)
    except psycopg.Error as e:
        return LedgerColumns([], " ".join(str(e).split()), table, mapped)
