"""How a bundle's logs are read: one Source per log (channel, account, operations, ledger), from incident.toml.

    sources = mapping.sources(folder, meta, toml)   # meta: incident.toml (or --mapping FILE) as a dict, read from toml
    for source in sources["operations"]: ...       # a log's Sources: one, or one per table of [[logs.NAME]]

A Source names its files (globs from the bundle folder, several files merged), their format
(`jsonl`, `csv`, `json` with a `records` path, or `text` lines read by a regex with named
groups; for the ledger `sqlite` or `csv`), where each of the bundle's fields is found (a
field name or a dotted JSON path, or a table {path, regex} taking the regex's first group),
the timestamp format (`auto`, `iso`, `epoch_s`, `epoch_ms`, `epoch_us`, `local` with `zone`),
the source's code vocabulary (its words -> the bundle's codes; `-` skips the line), which lines
to take (`take`: field values a line must have), defaults for fields a line lacks, and the
GUID's case. Without a `[logs.NAME]` table the source is the plain bundle of
docs/incident-bundle.md: `NAME.jsonl` or `NAME.csv`, the bundle's own field names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from relaychaos.errors import HarnessError

DOC = "docs/incident-bundle.md"
REQUIRED = {
    "channel": ("guid", "at", "from", "to", "amount", "result"),
    "account": ("guid", "at", "from", "to", "amount", "code"),
    "operations": ("at", "event"),
    "ledger": ("guid", "status", "attempts"),
}
OPTIONAL = {
    "channel": ("relay",),
    "account": ("answered_at",),
    "operations": ("relay", "command", "argument"),
    "ledger": ("resp_code", "request", "response", "updated_at"),
}
# fields a record has only when another field has a value: (log, field) -> (that field, its value)
ONLY_WHEN = {("operations", "command"): ("event", "batch"), ("operations", "argument"): ("event", "batch")}
CODED = ("result", "code", "event", "command")  # fields the vocabulary translates
FORMATS = {
    "channel": ("jsonl", "csv", "json", "text", "logfmt"),
    "account": ("jsonl", "csv", "json", "text", "logfmt"),
    "operations": ("jsonl", "csv", "json", "text", "logfmt"),
    "ledger": ("sqlite", "csv"),
}
SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".json": "json",
    ".log": "text",
    ".logfmt": "logfmt",
    ".txt": "text",
    ".sqlite": "sqlite",
    ".db": "sqlite",
    ".sqlite3": "sqlite",
}
TIME_FORMATS = ("auto", "iso", "epoch_s", "epoch_ms", "epoch_us", "epoch_ns", "local")
KEYS = {
    *("files", "format", "fields", "time", "zone", "codes", "take", "defaults", "guid_case", "records", "pattern"),
    *("delimiter", "quote"),
}


class BundleError(HarnessError):
    """An incident bundle that cannot be imported as it is."""


@dataclass(frozen=True)
class FieldSpec:
    """Where one of the bundle's fields is in a source's line: a dotted path, and optionally a regex's group 1; or
    (`file`) the regex's group 1 in the name of the file the line is in. A time may be `plus` a duration read from
    another field, in `unit` seconds, negative for a duration taken off (`minus`: a request's start from the time
    it ended and how long it took)."""

    path: tuple[str, ...]
    regex: re.Pattern | None = None
    file: bool = False
    plus: FieldSpec | None = None
    unit: float = 1.0

    @property
    def name(self) -> str:
        return "the file's name" if self.file else ".".join(self.path)


@dataclass(frozen=True)
class Source:
    """One log of the bundle and how to read it (see the module doc)."""

    name: str  # channel | account | operations | ledger
    files: tuple[Path, ...]
    format: str
    fields: dict[str, FieldSpec]
    time: str = "auto"
    zone: str | None = None
    codes: dict[str, str] = field(default_factory=dict)
    take: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    defaults: dict[str, object] = field(default_factory=dict)
    guid_case: str = "as-is"
    records: tuple[str, ...] = ()  # for format json: the path of the list of records
    pattern: re.Pattern | None = None  # for format text
    mapped: frozenset[str] = frozenset()  # the fields the table's `fields` maps (the rest read by their own names)
    toml: str = "incident.toml"  # the mapping file's name, as messages name it
    delimiter: str = ","  # for format csv: the character between columns, and the one quoting a column
    quote: str = '"'
    part: int = 0  # of several tables for one log ([[logs.operations]]: 1, 2, ...), which; 0: the log's only one
    # set by __post_init__ (what readers.py checks every line for)
    needed: frozenset[str] = field(init=False, repr=False, compare=False)
    keyed: frozenset[str] = field(init=False, repr=False, compare=False)
    coded: tuple[str, ...] = field(init=False, repr=False, compare=False)
    conditional: tuple[str, ...] = field(init=False, repr=False, compare=False)  # mapped fields of ONLY_WHEN

    @property
    def required(self) -> tuple[str, ...]:
        return REQUIRED[self.name]

    def __post_init__(self) -> None:
        # what every line is checked for, as sets (readers.py, per line): keyed fields, all required, coded
        object.__setattr__(self, "needed", frozenset(REQUIRED[self.name]))
        object.__setattr__(self, "keyed", frozenset(k for k in ("guid", "at") if k in REQUIRED[self.name]))
        object.__setattr__(self, "coded", tuple(k for k in CODED if k in self.fields))
        object.__setattr__(self, "conditional", tuple(k for k in sorted(self.mapped) if (self.name, k) in ONLY_WHEN))

    @property
    def table(self) -> str:
        if self.part:
            return f"[[logs.{self.name}]] number {self.part} in {self.toml}"
        return f"[logs.{self.name}] in {self.toml}"


def _fail(where: str, what: str, fix: str) -> BundleError:
    return BundleError(what, where=where, fix=fix)


TIMES = ("at", "answered_at")  # the fields that may be a time plus a duration
UNITS_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6}  # a duration's unit


def _spec(where: str, key: str, value: object) -> FieldSpec:
    if isinstance(value, str) and value:
        return FieldSpec(tuple(value.split(".")))
    if isinstance(value, dict) and isinstance(value.get("file"), str):
        return FieldSpec(("file",), _regex(where, key, value["file"]), file=True)
    if isinstance(value, dict) and isinstance(value.get("path"), str):
        regex = _regex(where, key, value["regex"]) if value.get("regex") else None
        plus, minus = value.get("plus"), value.get("minus")
        if plus is None and minus is None:
            return FieldSpec(tuple(value["path"].split(".")), regex)
        unit = value.get("unit", "ms")
        by = plus if minus is None else minus
        if (
            key not in TIMES
            or not isinstance(by, str)
            or (plus is not None and minus is not None)
            or unit not in UNITS_S
        ):
            raise _fail(
                where,
                f"fields.{key}: plus = {plus!r}, minus = {minus!r}, unit = {unit!r} cannot be read",
                f"a time ({', '.join(TIMES)}) may be a time plus or minus a duration: "
                '{path = "BOOK_TS", plus = "PROC_MS", unit = "ms"} or {path = "finished", minus = "took_ms"} '
                "(unit s, ms or us)",
            )
        sign = 1.0 if minus is None else -1.0
        return FieldSpec(
            tuple(value["path"].split(".")), regex, plus=FieldSpec(tuple(by.split("."))), unit=sign * UNITS_S[unit]
        )
    raise _fail(
        where,
        f"fields.{key} = {value!r} is not a field name",
        f'write {key} = "name.in.the.line" (a JSON path, dots for nesting), {{path = "message", regex = '
        '"--min-age=(\\\\d+)"}, {file = "relay-(.+)\\\\.log"} (from the file\'s name) or, for a time, '
        '{path = "BOOK_TS", plus = "PROC_MS", unit = "ms"}',
    )


def _regex(where: str, key: str, text: object) -> re.Pattern:
    """A field's regex, compiled, with the group its value is."""
    try:
        regex = re.compile(str(text))
    except re.error as e:
        raise _fail(
            where,
            f"fields.{key}: the regex {text!r} does not compile ({e})",
            "write a Python regular expression whose first group is the value",
        ) from None
    if regex.groups < 1:
        raise _fail(where, f"fields.{key}: the regex {text!r} has no group", "put the value in a group: (...)")
    return regex


def _files(folder: Path, name: str, given: str | list[str] | None, toml: Path) -> tuple[Path, ...]:
    if given is None:
        found = sorted(folder.glob(f"{name}.*")) + sorted(folder.glob(f"{name}-*.*"))
        return tuple(p for p in found if p.suffix in SUFFIXES or name == "ledger")
    patterns = [given] if isinstance(given, str) else list(given)
    out: list[Path] = []
    for pattern in patterns:
        matched = sorted(folder.glob(pattern))
        if not matched:
            raise _fail(
                str(toml),
                f"[logs.{name}] files: {pattern!r} matches no file in {folder}",
                "give the files' names (globs allowed, from the bundle folder)",
            )
        out += [p for p in matched if p not in out]
    return tuple(out)


def _format(where: str, name: str, files: tuple[Path, ...], given: str | None) -> str:
    if given is not None:
        if given not in FORMATS[name]:
            raise _fail(
                where, f"[logs.{name}] format = {given!r} is not read", f"use one of {', '.join(FORMATS[name])}"
            )
        return given
    kinds = {SUFFIXES.get(p.suffix) for p in files}
    if len(kinds) != 1 or None in kinds or not kinds <= set(FORMATS[name]):
        names = ", ".join(p.name for p in files)
        raise _fail(
            str(files[0]) if files else where,
            f"the {name} log's format cannot be told from its name "
            f"({names}): the {name} log is read as {' or '.join(FORMATS[name])}",
            f'convert it, or name the format in {where} (format = "..."), see {DOC}',
        )
    kind = kinds.pop()
    assert kind is not None  # None in kinds was rejected above
    return kind


def _fields(where: str, name: str, given: dict[str, object] | None) -> dict[str, FieldSpec]:
    """Every field of the log `name`, each read from the bundle's field of its own name unless `given` maps it."""
    fields = {k: FieldSpec((k,)) for k in REQUIRED[name] + OPTIONAL[name]}
    for key, value in (given or {}).items():
        if key not in fields:
            raise _fail(
                where,
                f"fields.{key}: the {name} log has no field {key!r}",
                f"map the bundle's fields: {', '.join(fields)}",
            )
        fields[key] = _spec(where, key, value)
    return fields


def _time(where: str, time: str, zone: str | None) -> str:
    """The log's timestamp format, checked (a local time needs its zone)."""
    if time not in TIME_FORMATS:
        raise _fail(where, f"time = {time!r} is not a timestamp format", f"use one of {', '.join(TIME_FORMATS)}")
    if time == "local" and not zone:
        raise _fail(
            where,
            'time = "local" needs the zone the times were written in',
            'add zone = "Europe/Berlin" (an IANA zone name, or "UTC")',
        )
    return time


def _pattern(where: str, table: dict) -> re.Pattern:
    """The regex a text log's lines are read with (its named groups are the fields)."""
    try:
        return re.compile(table["pattern"])
    except (KeyError, re.error) as e:
        raise _fail(
            where,
            f'format = "text" needs a pattern, a regex with named groups ({e})',
            'add pattern = "(?P<at>\\\\S+) (?P<event>\\\\w+) relay=(?P<relay>\\\\S+)"',
        ) from None


def source(folder: Path, name: str, table: dict | None, toml: Path, part: int = 0) -> Source | None:
    """The Source of one log (or of one of its tables, `part` 1, 2, ...); None when the log is absent (an error for
    channel and account). `toml`: the mapping's file (messages name it)."""
    where = f"{toml}, [[logs.{name}]] number {part}" if part else f"{toml}, [logs.{name}]"
    if part and not (table or {}).get("files"):
        raise _fail(where, "a log of several tables names the files of each", 'add files = ["..."] to each table')
    table = dict(table or {})
    unknown = set(table) - KEYS
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(sorted(unknown))}", f"use only {', '.join(sorted(KEYS))}")
    files = _files(folder, name, table.get("files"), toml)
    if not files:
        if name in ("channel", "account"):
            raise _fail(
                str(folder),
                f"no {name} log ({name}.jsonl or {name}.csv)",
                f"add the {name} log, or name its files in [logs.{name}] files = [...] (see {DOC})",
            )
        return None
    fmt = _format(where, name, files, table.get("format"))
    fields = _fields(where, name, table.get("fields"))
    time = _time(where, table.get("time", "auto"), table.get("zone"))
    take = {
        tuple(str(k).split(".")): tuple(
            x if isinstance(x, str) else json.dumps(x)
            for x in (v if isinstance(v, list) else [v])  # as JSON writes it
        )
        for k, v in (table.get("take") or {}).items()
    }
    case = table.get("guid_case", "as-is")
    if case not in ("as-is", "lower", "upper"):
        raise _fail(where, f"guid_case = {case!r}", 'use "as-is", "lower" or "upper"')
    pattern = _pattern(where, table) if fmt == "text" else None
    delimiter, quote = (_character(where, table, key, default) for key, default in (("delimiter", ","), ("quote", '"')))
    return Source(
        name,
        files,
        fmt,
        fields,
        time,
        table.get("zone"),
        {str(k): str(v) for k, v in (table.get("codes") or {}).items()},
        take,
        dict(table.get("defaults") or {}),
        case,
        tuple(str(table.get("records", "items")).split(".")),
        pattern,
        frozenset((table.get("fields") or {}).keys()),
        toml.name,
        delimiter,
        quote,
        part,
    )


def _character(where: str, table: dict, key: str, default: str) -> str:
    """A CSV log's delimiter or quote character: one character (\\t: a tab)."""
    value = table.get(key, default)
    value = "\t" if value in ("\\t", "tab") else value
    if not (isinstance(value, str) and len(value) == 1):
        raise _fail(where, f"{key} = {value!r} is not one character", f'write e.g. {key} = ";" (or "\\t" for a tab)')
    return value


def sources(folder: Path, meta: dict, toml: Path) -> dict[str, tuple[Source, ...]]:
    """Every log of the bundle, by name, as the mapping `meta` (read from `toml`) says: one Source a log, or one a
    table where the log has several ([[logs.operations]]: three CronJobs' event files, each with its own defaults);
    BundleError on a mapping that cannot be used."""
    logs = meta.get("logs") or {}
    unknown = set(logs) - set(REQUIRED)
    if unknown:
        raise _fail(
            str(toml),
            f"[logs] names unknown log(s) {', '.join(sorted(unknown))}",
            f"map only {', '.join(REQUIRED)}",
        )
    out = {}
    for name in REQUIRED:
        tables = logs.get(name)
        if isinstance(tables, list) and name == "ledger":
            raise _fail(str(toml), "[[logs.ledger]]: a bundle has one ledger", "give one [logs.ledger] table")
        parts = list(enumerate(tables, 1)) if isinstance(tables, list) else [(0, tables)]
        found = [s for s in (source(folder, name, t, toml, n) for n, t in parts) if s is not None]
        if found:
            out[name] = tuple(found)
    return out


def slots(meta: dict, where: str) -> dict[str, str]:
    """[pods] of incident.toml: instance (pod) names or globs -> relay slots (one letter)."""
    pods = meta.get("pods") or {}
    for pod, slot in pods.items():
        if not (isinstance(slot, str) and re.fullmatch(r"[a-z]", slot)):
            raise _fail(where, f"[pods] {pod} = {slot!r} is not a relay slot", "map each pod to a, b, ... (one letter)")
    return dict(pods)
