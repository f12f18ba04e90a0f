"""One reader per log format: lines of a Source's files as (file, line, the bundle's fields), streamed.

    for row in rows(source, skipped):          # Row(file, line, fields), in file order
        ...

`jsonl` (one JSON object a line), `csv` (a header line), `json` (one document, its records
at the source's `records` path; the line is the record's number) and `text` (lines
matched by the source's regex, its named groups the fields). A line that is not taken
(`take`), has no GUID or no time (noise: health checks, debug lines), or whose code the
vocabulary maps to `-` is skipped and counted in `skipped`; a line that is taken and
lacks another required field is an error naming the file, the line and the fix.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from relaychaos.incidents.mapping import CODED, DOC, BundleError, FieldSpec, Source

KEYED = ("guid", "at")  # a line without these is noise, not a record


@dataclass(slots=True)
class Row:
    file: Path
    line: int
    fields: dict


@dataclass
class Skipped:
    """Lines skipped, per file: how many and the first such line, with why."""

    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, tuple[int, str]] = field(default_factory=dict)

    def add(self, file: Path, line: int, why: str) -> None:
        key = str(file)
        self.counts[key] = self.counts.get(key, 0) + 1
        self.first.setdefault(key, (line, why))

    def notes(self) -> list[str]:
        return [f"{f}: {n} line(s) skipped (first: line {self.first[f][0]}, {self.first[f][1]})"
                for f, n in self.counts.items()]


def _get(data, spec: FieldSpec):
    for key in spec.path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
        if data is None:
            return None
    if spec.regex is not None:
        found = spec.regex.search(str(data))
        return found.group(1) if found else None
    return data


def _raw_records(source: Source, path: Path) -> Iterator[tuple[int, object]]:
    """(line number, the line's data) of one file."""
    if source.format == "json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise BundleError(f"not a JSON document: {e}", where=str(path), fix="give one JSON document, or "
                              "format = \"jsonl\" for one object a line") from None
        for key in source.records:
            data = data.get(key) if isinstance(data, dict) else None
        if not isinstance(data, list):
            raise BundleError(f"no list of records at {'.'.join(source.records)!r}", where=str(path),
                              fix=f"name the path of the records: records = \"items\" in {source.table}")
        yield from enumerate(data, 1)
        return
    with open(path, encoding="utf-8", newline="" if source.format == "csv" else None) as f:
        if source.format == "csv":
            yield from _csv(source, path, f)
            return
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            if source.format == "text":
                found = source.pattern.search(line)
                yield n, (found.groupdict() if found else None)
                continue
            try:
                yield n, json.loads(line)
            except ValueError:
                yield n, None  # not JSON: a noise line (a stack trace, a banner), counted


def _csv(source: Source, path: Path, f) -> Iterator[tuple[int, object]]:
    reader = csv.DictReader(f)
    header = reader.fieldnames or []
    wanted = [s.path[0] for k, s in source.fields.items() if k in source.required and k not in source.defaults]
    missing = [c for c in wanted if c not in header]
    if missing:
        canon = ",".join(source.required)
        raise BundleError(f"the header lacks the column(s) {', '.join(missing)} (it has {', '.join(header) or 'nothing'})",
                          where=f"{path}, line 1", fix=f"add them to the first line: {canon} (or map your columns "
                          f"in {source.table} fields, see {DOC})")
    for row in reader:
        yield reader.line_num, {k: v.strip() if isinstance(v, str) else v for k, v in row.items() if k}


def rows(source: Source, skipped: Skipped) -> Iterator[Row]:
    """Every record of the source's files, file by file, in each file's order (see the module doc)."""
    specs = [(name, spec) for name, spec in source.fields.items()]
    keyed = [k for k in KEYED if k in source.required]
    take = [(FieldSpec(p), values) for p, values in source.take.items()]
    for path in source.files:
        for n, data in _raw_records(source, path):
            if not isinstance(data, dict):
                skipped.add(path, n, "not a record" if source.format != "text" else "not matched by the pattern")
                continue
            if take and not all(str(_get(data, spec)) in values for spec, values in take):
                skipped.add(path, n, "not taken (take)")
                continue
            fields = {}
            for name, spec in specs:
                value = _get(data, spec)
                if value is None or value == "":
                    value = source.defaults.get(name)
                if value is not None:
                    fields[name] = value
            absent = [k for k in keyed if k not in fields]
            if absent:
                skipped.add(path, n, f"no {' and no '.join(source.fields[k].name for k in absent)}")
                continue
            if _vocabulary(source, fields) == "-":
                skipped.add(path, n, "its code is mapped to \"-\"")
                continue
            missing = [k for k in source.required if k not in fields]
            if missing:
                raise BundleError(f"the record lacks {', '.join(source.fields[k].name for k in missing)}",
                                  where=f"{path}, line {n}", fix=f"give every record the fields "
                                  f"{', '.join(source.fields[k].name for k in source.required)}, or map them "
                                  f"in {source.table} (see {DOC})")
            yield Row(path, n, fields)


def _vocabulary(source: Source, fields: dict) -> str | None:
    """Translate the coded fields by the source's vocabulary, in place; '-' when a code says to skip the line."""
    for key in CODED:
        if key in fields:
            value = str(fields[key]).strip()
            fields[key] = source.codes.get(value, value)
            if fields[key] == "-":
                return "-"
    return None
