"""An incident bundle read and checked: the logs of a production night, every record with its file and line.

    bundle = read(Path("examples/incidents/reprocess-resent-timeouts"))

A bundle is a folder (docs/incident-bundle.md): the channel's and the account system's
logs (required), the operations log and the ledger (optional), and `incident.toml` (name,
description, relay, holds_on, account_timeout_ms, accounts, and how each log is read:
[logs.NAME] and [pods], relaychaos.incidents.mapping). Each log may be several files
(one per pod): they are merged and sorted by time, in one pass each (records.py makes
the records; spill.py keeps the channel's and the account system's on disk past a run of
them, and every later pass reads them afresh). Lines out of order, skipped lines and empty files are said in `notes`;
the first problem that would make a different scenario raises BundleError naming the
file, the line and the fix (guids.py checks the logs against each other).
"""

from __future__ import annotations

import fnmatch
import re
import sys
import time
import tomllib
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import TextIO

from relaychaos.incidents import ledger, mapping, spill
from relaychaos.incidents.mapping import DOC, BundleError, Source
from relaychaos.incidents.readers import Skipped, rows
from relaychaos.incidents.records import AccountLine, ChannelLine, Converter, OpLine
from relaychaos.incidents.spill import Log, Runs

__all__ = ["Bundle", "BundleError", "read"]
PROGRESS_EVERY_S = 2.0


@dataclass
class Bundle:
    folder: Path
    channel: Log[ChannelLine]  # in time order, on disk past spill.RUN records: each pass reads them afresh
    account: Log[AccountLine]  # in time order, on the account system's clock (+ account.offset, clocks.py)
    operations: list[OpLine] = field(default_factory=list)
    ledger: Runs = field(default_factory=Runs)  # (guid, the relay's last word on it) rows (ledger.py)
    ledger_file: str | None = None
    meta: dict = field(default_factory=dict)  # incident.toml (or the mapping file given)
    toml: Path | None = None  # the mapping's file, when the bundle has one (--mapping, or its incident.toml)
    notes: list[str] = field(default_factory=list)  # what was noticed and done: skipped lines, sorting, ...
    # what in incident.toml read nothing: a mapped field no record has, a field's regex that did not match, a [pods]
    # entry no instance matched (the night may not be what the logs say)
    warnings: list[str] = field(default_factory=list)
    lines: int = 0  # lines read, all logs
    counts: dict[str, int] = field(default_factory=dict)  # records per log (the walk lets the records go)


class Progress:
    """A progress line on standard error every PROGRESS_EVERY_S while a long import reads its logs."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.started = self.last = time.monotonic()
        self.records = 0

    def tick(self, path: str, line: int) -> None:
        self.records += 1
        if self.records & 0x3FFF:
            return
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            print(
                f"relaychaos: reading {Path(path).name}: line {line:,}; {self.records:,} records so far, "
                f"{now - self.started:.0f} s",
                file=self.stream,
                flush=True,
            )


def _meta(path: Path, given: bool) -> dict:
    """The mapping's TOML: incident.toml in the bundle (none: {}), or the file --mapping named (which must be there)."""
    if not path.is_file():
        if given:
            raise BundleError(
                "no such file", where=str(path), fix="name the mapping's TOML file (--mapping), or leave --mapping out"
            )
        return {}
    text = path.read_text()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BundleError(f"not valid TOML: {e}", where=str(path), fix=_toml_fix(text, str(e))) from None


def _toml_fix(text: str, error: str) -> str:
    """What to do about a TOML syntax error: an inline table left open at the end of a line is the usual one."""
    at = re.search(r"at line (\d+)", error)
    lines = text.splitlines()
    n = int(at.group(1)) if at else 0
    for line in lines[max(n - 2, 0) : n]:
        code = line.split("#", 1)[0]
        if code.count("{") > code.count("}"):
            return (
                "an inline table { ... } must end on the line it starts on (TOML 1.0): put it on one line, or "
                "write it as a table of its own, e.g. [logs.channel.fields] with one key a line "
                f"(see {DOC})"
            )
    return "fix the syntax"


def _load(
    source: Source, convert: Converter, progress: Progress, notes: list[str], warnings: list[str], out: Log | list
) -> int:
    """Add the source's records to `out` (sorted by time once every source of its log is read), and return how
    many lines were read; notes on order, skips, empty files; warnings on the mapping's fields that read nothing."""
    skipped = Skipped()
    added = 0
    last: dict[str, float] = {}  # the latest at so far, per file
    disorder: dict[str, tuple[int, float]] = {}  # file -> (the first line out of order, how far back)
    taken: dict[str, int] = {}  # records taken, per file
    previous: dict[str, float] = {}  # the at of the file's record before, and the files where one rose above it
    rising: set[str] = set()
    # an account log: the last answered_at per file, and whether the file follows it
    answered: dict[str, float] = {}
    by_answer: dict[str, bool] = {}
    follow_answers = source.name == "account" and "answered_at" in source.fields
    append, tick = out.append if isinstance(out, list) else out.add, progress.tick
    for file, line, fields in rows(source, skipped):
        record = convert(file, line, fields)
        if record.at > previous.get(file, record.at):
            rising.add(file)
        previous[file] = record.at
        prev = last.get(file)
        if prev is None or record.at >= prev:
            last[file] = record.at
        elif file not in disorder:
            disorder[file] = (line, prev - record.at)
        if follow_answers and type(record) is AccountLine and record.answered_at is not None:
            if record.answered_at < answered.get(file, record.answered_at):
                by_answer[file] = False
            answered[file] = record.answered_at
        taken[file] = taken.get(file, 0) + 1
        append(record)
        added += 1
        if not added % spill.RUN:
            convert.forget()  # the strings shared by the records in memory: those of a run at most
        tick(file, line)
    merged = " and merged with the other files" if len(source.files) > 1 else ""
    notes += _order_notes(disorder, rising, by_answer if follow_answers else None, merged)
    notes += skipped.notes(source.table if source.part else "")
    warnings += _unread(source, skipped, added)
    empty = [str(p) for p in source.files if not taken.get(str(p))]
    if empty and source.name in ("channel", "account") and len(empty) == len(source.files):
        why = "; ".join(skipped.notes()) or "it is empty, or a header line only"
        raise BundleError(
            f"the {source.name} log holds no record ({why})",
            where=", ".join(empty),
            fix=f"give the {source.name} log with its lines (columns in {DOC}), or map its fields in {source.table}",
        )
    notes += [f"{p}: no record taken from this file (empty, a header only, or every line skipped)" for p in empty]
    if len(source.files) > 1 and added:
        notes.append(
            f"{source.name}: {len(source.files)} files merged by time ({', '.join(p.name for p in source.files)})"
        )
    return sum(skipped.lines.values())


def _order_notes(
    disorder: dict[str, tuple[int, float]], rising: set[str], by_answer: dict[str, bool] | None, merged: str
) -> list[str]:
    """What the import says of each file not in the order of at: newest first (an export's order), in the order
    calls were answered (an account log, `by_answer`), or out of order (times to check)."""
    out: list[str] = []
    for path, (line, back) in disorder.items():
        if path not in rising:
            out.append(
                f"{path}: newest first, as log exports (Loki, CloudWatch Logs Insights, kubectl) write them: "
                f"its lines were read in time order{merged}"
            )
        elif by_answer is not None and by_answer.get(path, True):
            out.append(
                f"{path}: in the order the calls were answered (answered_at), not the order they were "
                f"received (at: line {line}'s is {back:.3f} s earlier than a line above it's): its lines were "
                f"sorted by at{merged}"
            )
        else:
            out.append(
                f"{path}: not in the order of at (line {line}'s is {back:.3f} s earlier than a line above "
                f"it's): its lines were sorted by at{merged}. That is usual when a line is written as its "
                "request ends; if each line was written at its at, the file's times are wrong: correct them"
            )
    return out


def _unread(source: Source, skipped: Skipped, taken: int) -> list[str]:
    """What the source's mapped fields did not read: a field none of its records has, a regex that did not match."""
    out = []
    for name in sorted(source.mapped):
        spec, default = source.fields[name], source.defaults.get(name)
        got = f"they got its default {default!r}" if default is not None else "they were read without it"
        missing = skipped.empty.get(name, 0)
        unmatched = skipped.unmatched.get(name)
        records = skipped.having.get(name, 0) if name in source.conditional else taken
        if records and missing == records and unmatched is None:
            out.append(
                f"{source.table}: fields.{name} = {spec.name!r} is in none of its {records:,} records, so {got}"
                f"{' (relay instance a)' if name == 'relay' and default is None else ''}: name the key its lines "
                "have (a field name, or a dotted JSON path)"
            )
        elif unmatched is not None and spec.regex is not None:
            count, file, line, value = unmatched
            out.append(
                f"{source.table}: fields.{name}: the regex {spec.regex.pattern!r} matched nothing in "
                f"{spec.name} on {count:,} of {records:,} records (first: {file}, line {line}: {value[:80]!r}), so "
                f"{got}: make its first group match every value, or take only the lines that have one (take)"
            )
    return out


def _unused_pods(pods: dict[str, str], instances: set[str], where: str) -> list[str]:
    """[pods] entries that no instance name in the logs matched."""
    unused = [pod for pod in pods if not any(t == pod or fnmatch.fnmatchcase(t, pod) for t in instances)]
    seen = ", ".join(sorted(instances)[:8]) or "none"
    return [f"{where}: [pods] {pod!r} matches no relay instance the logs name (they name: {seen})" for pod in unused]


def read(folder: Path, progress: Progress | None = None, mapping_file: Path | None = None) -> Bundle:
    """Read and check a bundle folder, through its incident.toml or the mapping file given; BundleError (file, line,
    fix) on the first problem."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BundleError("not a folder", where=str(folder), fix=f"give the bundle's folder (see {DOC})")
    toml = Path(mapping_file) if mapping_file is not None else folder / "incident.toml"
    meta = _meta(toml, mapping_file is not None)
    sources = mapping.sources(folder, meta, toml)
    pods = mapping.slots(meta, str(toml))
    progress = progress or Progress()
    notes: list[str] = []
    warnings: list[str] = []
    instances: set[str] = set()
    logs: dict[str, Log] = {"channel": Log(ChannelLine), "account": Log(AccountLine)}
    operations: list[OpLine] = []  # a few records: in memory
    total = 0
    strings: dict[str, str] = {}
    for name in ("channel", "account", "operations"):
        for source in sources.get(name, ()):
            convert = Converter(source, pods, folder, strings)
            total += _load(source, convert, progress, notes, warnings, logs.get(name, operations))
            instances |= convert.instances
        if name in logs:
            logs[name].close()
    operations.sort(key=attrgetter("at"))  # stable: lines of one moment stay in file order
    warnings += _unused_pods(pods, instances, str(toml))
    (book,) = sources.get("ledger", (None,))
    rows_ = Runs()
    for row in ledger.read(book) if book is not None else ():
        rows_.add(row)
    rows_.close()
    bundle = Bundle(
        folder,
        logs["channel"],
        logs["account"],
        operations,
        rows_,
        ", ".join(p.name for p in book.files) if book is not None else None,
        meta,
        toml if meta else None,
        notes,
        warnings,
        total,
        {"channel": len(logs["channel"]), "account": len(logs["account"]), "operations": len(operations)},
    )
    return bundle
