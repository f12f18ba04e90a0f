"""An incident bundle read and checked: the logs of a production night, every record with its file and line.

    bundle = read(Path("examples/incidents/reprocess-resent-timeouts"))

A bundle is a folder (docs/incident-bundle.md): `channel.jsonl|csv` and `account.jsonl|csv`
(required), `operations.jsonl|csv` and `ledger.sqlite` (optional), `incident.toml`
(optional: name, description, relay, holds_on, account_timeout_ms, accounts). The first
problem raises BundleError naming the file, the line and the fix.
"""
from __future__ import annotations

import csv
import json
import re
import sqlite3
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from relaychaos.errors import HarnessError

DOC = "docs/incident-bundle.md"
CHANNEL_COLUMNS = ("guid", "at", "from", "to", "amount", "result")
ACCOUNT_COLUMNS = ("guid", "at", "from", "to", "amount", "code")
OPERATIONS_COLUMNS = ("at", "event")
LEDGER_COLUMNS = ("guid", "status", "resp_code", "request", "response", "attempts", "updated_at")
RESULTS = re.compile(r"0000|B2\d\d|E500|E90[1-4]|E400|timeout")
CODES = re.compile(r"0000|B2\d\d|E500")
EVENTS = ("restart", "deploy", "kill", "start", "batch")
BATCH_COMMANDS = ("resolve", "reprocess", "purge")


class BundleError(HarnessError):
    """An incident bundle that cannot be imported as it is."""


@dataclass(frozen=True)
class Record:
    """One line of a log: where it came from, its time (unix seconds), its fields as read."""

    file: str
    line: int
    at: float
    fields: dict

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"

    def __getitem__(self, key: str):
        return self.fields.get(key)


@dataclass
class Bundle:
    folder: Path
    channel: list[Record]
    account: list[Record]
    operations: list[Record] = field(default_factory=list)
    ledger: dict[str, dict] = field(default_factory=dict)  # guid -> row, as the relay left it
    ledger_file: str | None = None
    meta: dict = field(default_factory=dict)  # incident.toml


def parse_time(text) -> float | None:
    """Unix seconds from a number or an ISO 8601 time (a time without a zone is taken as UTC); None if neither."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str) or not text.strip():
        return None
    s = text.strip()
    try:
        return float(s)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(s.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def _fail(where: str, what: str, fix: str) -> BundleError:
    return BundleError(what, where=where, fix=fix)


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict]]:
    """(line number, fields) of a JSON-lines or CSV file, each holding `columns`."""
    rows: list[tuple[int, dict]] = []
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        header = reader.fieldnames or []
        missing = [c for c in columns if c not in header]
        if missing:
            raise _fail(f"{path}, line 1", f"the header lacks the column(s) {', '.join(missing)} (it has "
                        f"{', '.join(header) or 'nothing'})", f"add them to the first line: {','.join(columns)} "
                        f"(see {DOC})")
        for n, row in enumerate(reader, 2):
            rows.append((n, {k: (v.strip() if isinstance(v, str) else v) for k, v in row.items() if k}))
        return rows
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise _fail(f"{path}, line {n}", f"not a JSON object: {e}", "write one JSON object per line") from None
        if not isinstance(row, dict):
            raise _fail(f"{path}, line {n}", "not a JSON object", "write one JSON object per line")
        missing = [c for c in columns if c not in row]
        if missing:
            raise _fail(f"{path}, line {n}", f"the record lacks {', '.join(missing)}",
                        f"give every record the fields {', '.join(columns)} (see {DOC})")
        rows.append((n, row))
    return rows


def _records(path: Path, columns: tuple[str, ...], check) -> list[Record]:
    out = []
    for n, row in _rows(path, columns):
        where = f"{path}, line {n}"
        at = parse_time(row.get("at"))
        if at is None:
            raise _fail(where, f"at = {row.get('at')!r} is not a time",
                        "write ISO 8601 with a zone (2026-11-14T23:10:00.120Z) or unix seconds (1794697800.12)")
        fields = dict(row)
        check(where, fields)
        out.append(Record(path.name, n, at, fields))
    return out


def _amount(where: str, fields: dict) -> None:
    try:
        fields["amount"] = int(str(fields["amount"]))
    except ValueError:
        raise _fail(where, f"amount = {fields['amount']!r} is not a whole number", "write the amount in minor units, "
                    "e.g. 120") from None
    for key in ("guid", "from", "to"):
        if not str(fields.get(key) or "").strip():
            raise _fail(where, f"{key} is empty", f"give the transfer's {key}")
        fields[key] = str(fields[key]).strip()


def _transfer(where: str, f: dict, key: str, codes: re.Pattern, what: str, fix: str) -> None:
    """A transfer's fields, and its answer `key` among `codes`."""
    _amount(where, f)
    f[key] = str(f[key]).strip()
    if not codes.fullmatch(f[key]):
        raise _fail(where, f"{key} = {f[key]!r} is not {what}", fix)


def _channel_check(where: str, f: dict) -> None:
    _transfer(where, f, "result", RESULTS, "a relay answer code", "write the code the relay answered (0000, B2xx, "
              "E500, E901-E904, E400) or `timeout` when the channel got no answer")
    f["relay"] = str(f.get("relay") or "a").strip()
    if not re.fullmatch(r"[a-z]", f["relay"]):
        raise _fail(where, f"relay = {f['relay']!r} is not a relay instance", "name instances a, b, ... (one letter)")


def _account_check(where: str, f: dict) -> None:
    _transfer(where, f, "code", CODES, "an account-system answer", "write 0000, B2xx or E500 (contract section 2)")
    if f.get("answered_at") not in (None, ""):
        answered = parse_time(f["answered_at"])
        if answered is None:
            raise _fail(where, f"answered_at = {f['answered_at']!r} is not a time", "write ISO 8601 with a zone or "
                        "unix seconds, or leave it out")
        f["answered_at"] = answered
    else:
        f["answered_at"] = None


def _operations_check(where: str, f: dict) -> None:
    f["event"] = str(f["event"]).strip()
    if f["event"] not in EVENTS:
        raise _fail(where, f"event = {f['event']!r} is not known", f"use one of {', '.join(EVENTS)}")
    f["relay"] = str(f.get("relay") or "a").strip()
    if f["event"] == "batch":
        if str(f.get("command") or "").strip() not in BATCH_COMMANDS:
            raise _fail(where, f"a batch event needs command = {' | '.join(BATCH_COMMANDS)}, got {f.get('command')!r}",
                        "name the batch command that ran, and its argument (argument = 3 for reprocess "
                        "--max-attempts 3)")
        f["command"] = str(f["command"]).strip()
        try:
            f["argument"] = float(str(f.get("argument")))
        except ValueError:
            raise _fail(where, f"argument = {f.get('argument')!r} is not a number", "give the command's one argument "
                        "(--min-age S, --max-attempts N, --retention S) as a number") from None


def _one(folder: Path, stem: str, required: bool) -> Path | None:
    found = [p for p in (folder / f"{stem}.jsonl", folder / f"{stem}.csv") if p.exists()]
    if len(found) > 1:
        raise _fail(str(folder), f"both {found[0].name} and {found[1].name} are here", "keep one of them")
    if not found and required:
        raise _fail(str(folder), f"no {stem}.jsonl or {stem}.csv", f"add the {stem} log (columns in {DOC})")
    return found[0] if found else None


def _ledger(path: Path) -> dict[str, dict]:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            cols = [r[1] for r in conn.execute("PRAGMA table_info(ledger)")]
            missing = [c for c in LEDGER_COLUMNS if c not in cols]
            if missing:
                raise _fail(str(path), f"no table `ledger` with the contract's columns (missing: {', '.join(missing)})",
                            "give the relay's ledger file as it is (contract section 4), or leave it out")
            conn.row_factory = sqlite3.Row
            return {r["guid"]: dict(r) for r in conn.execute("SELECT * FROM ledger")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        raise _fail(str(path), f"not a SQLite database: {e}", "give the relay's ledger file as it is (copy it with "
                    "`sqlite3 LEDGER '.backup ledger.sqlite'` while the relay runs)") from None


def read(folder: Path) -> Bundle:
    """Read and check a bundle folder; BundleError (file, line, fix) on the first problem."""
    folder = Path(folder)
    if not folder.is_dir():
        raise _fail(str(folder), "not a folder", f"give the bundle's folder (see {DOC})")
    meta: dict = {}
    if (folder / "incident.toml").exists():
        try:
            meta = tomllib.loads((folder / "incident.toml").read_text())
        except tomllib.TOMLDecodeError as e:
            raise _fail(str(folder / "incident.toml"), f"not valid TOML: {e}", "fix the syntax") from None
    channel = _records(_one(folder, "channel", True), CHANNEL_COLUMNS, _channel_check)
    account = _records(_one(folder, "account", True), ACCOUNT_COLUMNS, _account_check)
    ops_path = _one(folder, "operations", False)
    operations = _records(ops_path, OPERATIONS_COLUMNS, _operations_check) if ops_path else []
    ledger_path = next((p for p in (folder / "ledger.sqlite", folder / "ledger.db") if p.exists()), None)
    sent = {r["guid"] for r in channel}
    for r in account:
        if r["guid"] not in sent:
            raise _fail(f"{folder / r.file}, line {r.line}", f"GUID {r['guid']} is in the account log but the channel "
                        "log never sent it",
                        "add the channel's request for it to the channel log, or drop the line if another client "
                        "sent it (a relay that minted a new GUID, rule guid-preserved, cannot be imported: write that "
                        "scenario by hand, see scenarios/regressions/recovery-minted-new-guid.yaml)")
    return Bundle(folder, channel, account, operations, _ledger(ledger_path) if ledger_path else {},
                  ledger_path.name if ledger_path else None, meta)
