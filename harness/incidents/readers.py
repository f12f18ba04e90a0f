"""One reader per log format: lines of a Source's files as (file, line, the bundle's fields), streamed.

    for file, line, fields in rows(source, skipped):      # in file order, file by file
        ...

`jsonl` (one JSON object a line), `csv` (a header line; the source's delimiter and quote),
`json` (one document, its records at the source's `records` path; the line is the record's
number), `logfmt` (key=value pairs, values quoted when they hold spaces; a field is named by its
whole key, dots and all) and `text` (lines matched by the source's regex, its named groups the
fields). A line that is not taken
(`take`: values a field must have, globs allowed), has no GUID or no time (noise: health
checks, debug lines), or whose code the vocabulary maps to `-` is skipped and counted in
`skipped`; a line that is taken and lacks another required field is an error naming the
file, the line and the fix. Streamed, one line at a time: where `take` asks for plain
words, a line that does not contain them is skipped before it is parsed.
"""

from __future__ import annotations

import contextlib
import csv
import fnmatch
import functools
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from relaychaos.incidents.mapping import DOC, ONLY_WHEN, BundleError, FieldSpec, Source

KEYED = ("guid", "at")  # a line without these is noise, not a record


class Unmatched(str):
    """A field's value that its regex did not match (read as absent, and counted)."""


WORD = re.compile(r"[A-Za-z0-9 ._:-]*[A-Za-z][A-Za-z0-9 ._:-]*")  # a take value JSON writes as it is, as a string
JSON_WORDS = ("true", "false", "null")  # ... unless it is one of these, which JSON writes bare
LOGFMT = re.compile(r'([^\s=]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)')  # key=value, key="a quoted value"
# reads a field from a parsed line (a JSON value, a CSV row): the value there, any JSON value (None: absent)
Read = Callable[[Any], Any]
Getters = list[tuple[str, Read]]  # the bundle's field name, and how to read it
Takes = list[tuple[Read, re.Pattern[str]]]  # a field read, and the values it must have to be taken


@dataclass
class Skipped:
    """Lines skipped, per file: how many and the first such line, with why; and the lines read."""

    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, tuple[int, str]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # the last line (or record) number read, per file
    unit: str = "line"  # what a number counts: a file's lines, or (format json) the records of its document
    # per mapped field: the records taken without a value for it, and for a field read by a regex, the records whose
    # value its regex did not match (how many; the first: file, line, value)
    empty: dict[str, int] = field(default_factory=dict)
    unmatched: dict[str, list] = field(default_factory=dict)
    having: dict[str, int] = field(default_factory=dict)  # per field a record has only sometimes (ONLY_WHEN): records

    def add(self, file: str, line: int, why: str) -> None:
        self.counts[file] = self.counts.get(file, 0) + 1
        if file not in self.first:
            self.first[file] = (line, why)

    def notes(self, by: str = "") -> list[str]:
        """A note per file; `by`: the table that read it, where one file is read by several."""
        by = f" by {by}" if by else ""
        return [
            f"{f}: {n:,} {self.unit}(s) skipped{by} (first: {self.unit} {self.first[f][0]}, {self.first[f][1]})"
            for f, n in self.counts.items()
        ]


def getter(spec: FieldSpec) -> Read:
    """A function reading the field at spec's path (and its regex's group 1) from a parsed line."""
    path, regex = spec.path, spec.regex
    if len(path) == 1:
        key = path[0]

        def get(data: Any) -> Any:
            return data.get(key)
    else:

        def get(data: Any) -> Any:
            for key in path:
                if not isinstance(data, dict):
                    return None
                data = data.get(key)
            return data

    if regex is None:
        return get

    def matched(data: Any) -> str | None:
        value = get(data)
        if value is None:
            return None
        found = regex.search(str(value))
        return found.group(1) if found else Unmatched(value)

    return matched


def _column(spec: FieldSpec, header: list[str]) -> Read:
    """A function reading a CSV column (named by the spec's whole name) from a row, by its index."""
    name = spec.name
    if name not in header:
        return lambda row: None
    i = header.index(name)
    plain = lambda row: row[i] if i < len(row) else None  # noqa: E731 - the hot path
    regex = spec.regex
    if regex is None:
        return plain
    return lambda row: None if (v := plain(row)) is None else m.group(1) if (m := regex.search(v)) else Unmatched(v)


def _json_lines(source: Source, path: str, words: list[str], skipped: Skipped) -> Iterator[tuple[int, object]]:
    pattern = source.pattern if source.format == "text" else None
    assert source.format != "text" or pattern is not None, "a text source has its pattern (mapping.source)"
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if words and not all(w in line for w in words):
                skipped.add(path, n, "not taken (take)")  # counted here: most lines of a busy log end here
                continue
            if pattern is not None:
                found = pattern.search(line)
                yield n, (found.groupdict() if found else ("not matched by the pattern" if line.strip() else ""))
                continue
            if source.format == "logfmt":
                pairs = logfmt(line)
                yield n, (pairs if pairs else ("no key=value pairs" if line.strip() else ""))
                continue
            try:
                yield n, json.loads(line)
            except ValueError:
                yield n, ("not a JSON object" if line.strip() else "")  # a stack trace, a banner: noise


def logfmt(line: str) -> dict[str, str]:
    """The key=value pairs of a logfmt line, quoted values unquoted (\\" and \\\\ inside them unescaped)."""
    out = {}
    for key, value in LOGFMT.findall(line):
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        out[key] = value
    return out


def _document(source: Source, path: str) -> Iterator[tuple[int, object]]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except ValueError as e:
        raise BundleError(
            f"not a JSON document: {e}",
            where=path,
            fix='give one JSON document, or format = "jsonl" for one object a line',
        ) from None
    for key in source.records:
        data = data.get(key) if isinstance(data, dict) else None
    if not isinstance(data, list):
        raise BundleError(
            f"no list of records at {'.'.join(source.records)!r}",
            where=path,
            fix=f'name the path of the records: records = "items" in {source.table}',
        )
    yield from enumerate(data, 1)


def _words(source: Source) -> list[str]:
    """Plain take values that a line must contain to be taken (JSON strings for jsonl)."""
    if source.format not in ("jsonl", "text", "logfmt"):
        return []
    out = []
    for values in source.take.values():
        if len(values) == 1 and WORD.fullmatch(values[0]) and values[0] not in JSON_WORDS:
            out.append(json.dumps(values[0]) if source.format == "jsonl" else values[0])
    return out


def unit(source: Source) -> str:
    """What a record's number counts: a file's lines, or (format json) the records of its document."""
    return "record" if source.format == "json" else "line"


def rows(source: Source, skipped: Skipped) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """Every record of the source's files, file by file, in each file's order (see the module doc)."""
    skipped.unit = unit(source)
    for path in map(str, source.files):
        with contextlib.ExitStack() as opened:  # a CSV file stays open while its rows are read
            if source.format == "csv":
                f = opened.enter_context(open(path, encoding="utf-8", newline=""))
                reader = csv.reader(f, delimiter=source.delimiter, quotechar=source.quote)
                header = [h.strip() for h in next(reader, [])]
                _check_header(source, path, header)
                columns = functools.partial(_column, header=header)
                getters = [(name, _field(spec, path, columns)) for name, spec in source.fields.items()]
                take = [(_column(FieldSpec(p), header), _pattern(v)) for p, v in source.take.items()]
                records: Iterator[tuple[int, object]] = ((reader.line_num, row) for row in reader)
            else:
                flat = source.format == "logfmt"  # a key is read whole: req.id is one key, not a path
                read = (lambda s: getter(_whole(s))) if flat else getter
                getters = [(name, _field(spec, path, read)) for name, spec in source.fields.items()]
                take = [
                    (getter(_whole(FieldSpec(p)) if flat else FieldSpec(p)), _pattern(v))
                    for p, v in source.take.items()
                ]
                records = (
                    _document(source, path)
                    if source.format == "json"
                    else _json_lines(source, path, _words(source), skipped)
                )
            n = 0
            for n, data in records:
                fields = _fields(source, path, n, data, getters, take, skipped)
                if fields is not None:
                    yield path, n, fields
            skipped.lines[path] = n


class Later(NamedTuple):
    """A time plus a duration (FieldSpec.plus): the time as the line has it, the duration, its unit in seconds."""

    at: object
    by: object
    unit: float


def _field(spec: FieldSpec, path: str, read: Callable[[FieldSpec], Read]) -> Read:
    """How a field is read from the lines of the file at `path`: by `read` (the format's reader of a spec), from the
    file's name (spec.file: one value for every line), or as a time plus a duration (spec.plus)."""
    if spec.file:
        assert spec.regex is not None, "a field from the file's name has its regex (mapping._spec)"
        found = spec.regex.search(os.path.basename(path))
        value = found.group(1) if found else Unmatched(os.path.basename(path))
        return lambda data: value
    base = read(spec)
    if spec.plus is None:
        return base
    by, unit = read(spec.plus), spec.unit

    def later(data: Any) -> Any:
        at = base(data)
        if at is None or at == "" or type(at) is Unmatched:
            return at
        duration = by(data)
        if duration is None or duration == "" or type(duration) is Unmatched:
            return None  # a time without its duration is not the time: counted as absent
        return Later(at, duration, unit)

    return later


def _whole(spec: FieldSpec) -> FieldSpec:
    """The spec reading its whole dotted name as one key (a logfmt key)."""
    return FieldSpec((spec.name,), spec.regex)


def _pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(fnmatch.translate(v) for v in values))


def _check_header(source: Source, path: str, header: list[str]) -> None:
    wanted = [s.name for k, s in source.fields.items() if k in source.required and k not in source.defaults]
    missing = [c for c in wanted if c not in header]
    if missing:
        canon = source.delimiter.join(source.required)
        split = _other_delimiter(header, source.delimiter)
        fix = (
            f'its columns are split by {split!r}, not {source.delimiter!r}: add delimiter = "{split}" to {source.table}'
            if split
            else f"add them to the first line: {canon} (or map your columns in {source.table} fields, see {DOC})"
        )
        raise BundleError(
            f"the header lacks the column(s) {', '.join(missing)} (it has "
            f"{', '.join(h for h in header if h) or 'nothing'})",
            where=f"{path}, line 1",
            fix=fix,
        )


def _other_delimiter(header: list[str], delimiter: str) -> str | None:
    """The character a header read as one column seems split by (; | tab), if any."""
    if len(header) != 1:
        return None
    return next((c for c in (";", "\t", "|", ",") if c != delimiter and header[0].count(c) >= 2), None)


def _taken(source: Source, path: str, n: int, data: object, take: Takes, skipped: Skipped) -> bool:
    """Whether a parsed line is a record its source takes; when not (and not blank), it is counted as skipped."""
    if isinstance(data, str):
        if data:
            skipped.add(path, n, data)
        return False
    if isinstance(data, list) and source.format == "csv":
        if not data:
            return False  # a blank line
    elif not isinstance(data, dict):
        skipped.add(path, n, "not a record")
        return False
    for get, pattern in take:
        value = get(data)
        if not pattern.fullmatch(value if type(value) is str else json.dumps(value)):
            skipped.add(path, n, "not taken (take)")
            return False
    return True


def _missed(skipped: Skipped, name: str, path: str, n: int, value: object) -> None:
    """Count a record taken without a value for the mapped field `name` (or whose value its regex did not match)."""
    skipped.empty[name] = skipped.empty.get(name, 0) + 1
    if type(value) is Unmatched:
        first = skipped.unmatched.setdefault(name, [0, path, n, str(value)])
        first[0] += 1


def _applies(source: Source, name: str, fields: dict[str, Any]) -> bool:
    """Whether a record is one that has field `name` (ONLY_WHEN: a batch run has a command, a kill none)."""
    when, wanted = ONLY_WHEN[source.name, name]
    return fields.get(when) == wanted


def _fields(
    source: Source, path: str, n: int, data: object, getters: Getters, take: Takes, skipped: Skipped
) -> dict[str, Any] | None:
    """The bundle's fields of one parsed line; None (and counted) when the line is skipped."""
    if not _taken(source, path, n, data, take, skipped):
        return None
    fields = {}
    missed = None  # (field, value) of the mapped fields this line lacks, counted once the line is a record
    for name, get in getters:
        value = get(data)
        if value is None or value == "" or type(value) is Unmatched:
            if name in source.mapped:
                missed = missed or []
                missed.append((name, value))
            value = source.defaults.get(name)
            if value is None:
                continue
        fields[name] = value
    keys = fields.keys()
    if not source.keyed <= keys:
        absent = [source.fields[k].name for k in KEYED if k in source.keyed and k not in fields]
        skipped.add(path, n, f"no {' and no '.join(absent)}")
        return None
    for key in source.coded:
        if key in fields:
            value = str(fields[key]).strip()
            value = fields[key] = source.codes.get(value, value)
            if value == "-":
                skipped.add(path, n, 'its code is mapped to "-"')
                return None
    if not source.needed <= keys:
        missing = [source.fields[k].name for k in source.required if k not in fields]
        raise BundleError(
            f"the record lacks {', '.join(missing)}",
            where=f"{path}, {unit(source)} {n}",
            fix=f"give every record the fields {', '.join(source.fields[k].name for k in source.required)}"
            f", or map them in {source.table} (see {DOC})",
        )
    for name, value in missed or ():
        if name not in source.conditional or _applies(source, name, fields):
            _missed(skipped, name, path, n, value)
    for name in source.conditional:
        if _applies(source, name, fields):
            skipped.having[name] = skipped.having.get(name, 0) + 1
    return fields
