"""The append-only history of a run: every call, fault, process event and observation, in order.

Shaped after Jepsen's histories: each event has an index (its place in the log),
a monotonic time, the process that acted, a type (`invoke`, then `ok`/`fail`/
`info` for its completion; `info` when the outcome is indeterminate), a function
name `f` and a value. Events are never changed or removed; verdicts and
timelines are derived from the log alone, and a saved log can be checked again.

Two logs with one interface (`EventLog`: append, iterate, count): `History` keeps its
events in memory; `StreamedHistory` writes each one to a JSON-lines file as it happens
(memory stays flat however long the run), gzipped on `close()` when large. One writer of
history files, `save(events, path)` (the same lines, the same gzip rule), and one reader,
`iter_events(path)`, which reads either file back in one pass; `History.read(path)` holds
what it reads in memory, and `HistoryFile(path)` is that reading as a source the checkers
can iterate again. `header(events)` is a history's header (its `scenario` event) as a typed record.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol, TextIO

import orjson

from relaychaos.events import TYPES, Event
from relaychaos.records.header import HistoryHeader

__all__ = [
    "header",
    "TYPES",
    "Event",
    "EventLog",
    "History",
    "StreamedHistory",
    "HistoryFile",
    "iter_events",
    "save",
    "compressed",
]

COMPRESS_OVER = 1 << 20  # bytes: a streamed history larger than this is gzipped when closed


def _event(index: int, at: float | None, process: str, type: str, f: str, value: dict[str, Any]) -> Event:
    if type not in TYPES:
        raise ValueError(f"event type must be one of {TYPES}, not {type!r}")
    return Event(index, time.monotonic() if at is None else at, process, type, f, value)


def _line(event: Event) -> str:
    return json.dumps(asdict(event), default=str) + "\n"


class EventLog(Protocol):
    """What the recorder writes into and the checkers read: History and StreamedHistory alike."""

    def append(self, process: str, type: str, f: str, at: float | None = None, **value: Any) -> Event: ...

    def __iter__(self) -> Iterator[Event]: ...

    def __len__(self) -> int: ...


def save(events: Iterable[Event], path: str | Path, compress_over: int | None = None) -> Path:
    """Write events to `path` as JSON lines, one event a line: the one writer of history files.

    A file larger than `compress_over` bytes is replaced by `path + ".gz"`; returns the path written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for e in events:
            out.write(_line(e))
    return compressed(path, compress_over)


def compressed(path: Path, compress_over: int | None) -> Path:
    """`path` gzipped into `path + ".gz"` when larger than `compress_over` bytes; the path that holds it now."""
    if compress_over is None or path.stat().st_size <= compress_over:
        return path
    packed = path.with_name(path.name + ".gz")
    with open(path, "rb") as src, gzip.open(packed, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    os.remove(path)
    return packed


class History:
    """An append-only, thread-safe event log; `append` is the only way in."""

    def __init__(self, events: list[Event] | None = None):
        self._events: list[Event] = list(events or [])
        self._lock = threading.Lock()

    @classmethod
    def streaming(cls, path: str | Path, compress_over: int = COMPRESS_OVER) -> StreamedHistory:
        """A log written to `path` as it happens instead of kept in memory (see StreamedHistory)."""
        return StreamedHistory(path, compress_over)

    def append(self, process: str, type: str, f: str, at: float | None = None, **value: Any) -> Event:
        """Add one event at monotonic time `at` (now, if not given); see harness.recorder for the kinds."""
        with self._lock:
            event = _event(len(self._events), at, process, type, f, value)
            self._events.append(event)
        return event

    def __iter__(self) -> Iterator[Event]:
        return iter(list(self._events))

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index: int) -> Event:
        return self._events[index]

    def where(
        self, *, f: str | None = None, type: str | None = None, guid: str | None = None, process: str | None = None
    ) -> list[Event]:
        """The events matching every filter given, in history order."""
        return [
            e
            for e in self._events
            if (f is None or e.f == f)
            and (type is None or e.type == type)
            and (guid is None or e.guid == guid)
            and (process is None or e.process == process)
        ]

    def dumps(self) -> str:
        """The log as JSON lines, one event a line (what `save` writes)."""
        return "".join(_line(e) for e in list(self._events))

    @classmethod
    def read(cls, path: str | Path) -> History:
        """A saved history file (`.jsonl` or `.jsonl.gz`) in memory; see iter_events for what is skipped."""
        return cls(list(iter_events(path)))


class StreamedHistory:
    """An append-only, thread-safe event log written to `path` as JSON lines, one event a line, flushed.

    Only the count is kept in memory. `close()` ends the file; one larger than
    `compress_over` bytes is then replaced by `path + ".gz"` and `path` names that.
    Iterating reads the file back (what was appended so far). Usable as a context manager.
    """

    def __init__(self, path: str | Path, compress_over: int = COMPRESS_OVER):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO | None = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 (kept open until close())
        self._count = 0
        self._compress_over = compress_over
        self._lock = threading.Lock()

    def append(self, process: str, type: str, f: str, at: float | None = None, **value: Any) -> Event:
        """Add one event at monotonic time `at` (now, if not given) and write it out; after close, an error."""
        with self._lock:
            if self._file is None:
                raise ValueError(f"history {self.path} is closed: nothing more can be appended")
            event = _event(self._count, at, process, type, f, value)
            self._file.write(_line(event))
            self._file.flush()
            self._count += 1
        return event

    def close(self) -> Path:
        """End the file (gzipped when larger than compress_over); returns its final path. Closing twice is fine."""
        with self._lock:
            if self._file is None:
                return self.path
            self._file.close()
            self._file = None
            self.path = compressed(self.path, self._compress_over)
        return self.path

    def __enter__(self) -> StreamedHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Event]:
        return iter_events(self.path)


def iter_events(path: str | Path) -> Iterator[Event]:
    """The events of a history file (`.jsonl`, or `.jsonl.gz`), read in one pass, one line at a time.

    A `path` that no longer exists but whose `.gz` does (a StreamedHistory compressed on
    close) is read from there. A last line cut short (the writer killed mid-line) is skipped, unless
    no line before it was an event.
    """
    path = Path(path)
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        path = path.with_name(path.name + ".gz")
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    with gzip.open(path, "rb") if gzipped else open(path, "rb") as stream:
        tail, n = b"", 0
        while chunk := stream.read(1 << 20):
            lines = (tail + chunk).split(b"\n")
            tail = lines.pop()
            for line in lines:
                n += 1
                if line.strip():
                    yield _parsed(line, path, n)
        if tail.strip():
            try:
                yield _parsed(tail, path, n + 1)
            except ValueError:
                if n == 0:
                    raise  # no event at all: not a history
                return  # the writer stopped mid-line: everything before it stands


def _parsed(line: bytes, path: Path, n: int) -> Event:
    try:
        f = orjson.loads(line)
        return Event(f["index"], f["time"], f["process"], f["type"], f["f"], f.get("value", {}))
    except (ValueError, KeyError, TypeError):
        raise ValueError(
            f"{path}, line {n}: not a history event ({line[:80]!r}); a history file holds one JSON "
            "object per line, as History.dumps or StreamedHistory writes them"
        ) from None


def header(events: Iterable[Event]) -> HistoryHeader:
    """A history's header, typed: its first `scenario` event's value (relaychaos.records.header); a header of
    defaults (name "?") when it has none. ValueError when the value is not a header."""
    for e in events:
        if e.f == "scenario":
            return HistoryHeader.from_builtins(e.value, "a history's header")
    return HistoryHeader()


class HistoryFile:
    """A saved history as a source the checkers can iterate (each iteration reads the file again)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __iter__(self) -> Iterator[Event]:
        return iter_events(self.path)
