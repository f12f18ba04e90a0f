"""A log's records in time order, kept on disk past a run's worth: a night of millions of records is not in memory.

    log = Log(AccountLine)
    log.add(record)               # in any order
    log.close()
    for r in log: ...             # in time order (at equal times: the order added), as often as needed
    log.offset = 1.5              # added to every time a pass reads (the account clock's offset, clocks.py)
    rows = Runs(); rows.add(("party", 3, 120)); rows.close(); for row in rows: ...     # any rows, in their order

Records are added as their plain fields; every RUN of them are sorted by time and written to a temporary file as
marshal blocks, and a closed Log merges its runs into one file (Runs reads its runs through heapq.merge on each
pass); a pass makes each record afresh, so a record one pass changes is not the record the next pass reads. A log of
fewer than RUN records never touches the disk. The files go when the Log does (or at exit).
"""

from __future__ import annotations

import heapq
import itertools
import marshal
import tempfile
from collections.abc import Iterator
from dataclasses import MISSING, fields
from operator import attrgetter
from pathlib import Path
from typing import Any, Generic, TypeVar

R = TypeVar("R")
RUN = 50_000  # records sorted in memory at a time, then written as one run
BLOCK = 1000  # records per marshal block of a run's file (a pass holds one block of each run)


class Runs:
    """Rows (tuples of plain values: str, int, float, None) in their sort order, on disk past `run` of them; every
    pass merges the runs afresh."""

    def __init__(self, run: int | None = None):
        self.run = run or RUN
        self._buffer: list[tuple[Any, ...]] = []
        self._files: list[Path] = []
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._made = 0  # run files made, for their names
        self.count = 0

    def __len__(self) -> int:
        return self.count

    @property
    def files(self) -> list[Path]:
        """The runs written so far."""
        return list(self._files)

    def add(self, row: tuple[Any, ...]) -> None:
        self._buffer.append(row)
        self.count += 1
        if len(self._buffer) >= self.run:
            self._spill()

    def close(self, merged: bool = False) -> None:
        """No more rows: the last run is written when others are, else the rows stay in memory, sorted. `merged`:
        the runs are merged into one file now, once (for rows read many times: each pass then reads one file, not
        a merge of many)."""
        if self._files and self._buffer:
            self._spill()
        self._buffer.sort()
        if merged and len(self._files) > 1:
            runs, self._files = self._files, []
            self._write(heapq.merge(*map(_read, runs)))
            for path in runs:
                path.unlink()

    def _spill(self) -> None:
        self._buffer.sort()
        self._write(iter(self._buffer))
        self._buffer = []

    def _write(self, rows: Iterator[tuple[Any, ...]]) -> None:
        """A run of these rows, in the order given."""
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="relaychaos-import-")
        path = Path(self._folder.name) / f"run-{self._made}"
        self._made += 1
        with path.open("wb") as f:
            while block := list(itertools.islice(rows, BLOCK)):
                data = marshal.dumps(block)
                f.write(len(data).to_bytes(4, "little") + data)
        self._files.append(path)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        # a generator: the pass holds the Runs, whose folder goes with it
        files = self._files
        yield from (_read(files[0]) if len(files) == 1 else heapq.merge(*map(_read, files))) if files else self._buffer


class Log(Generic[R]):
    """The records of one log (see the module doc); `kind` is their dataclass, made from its fields without defaults,
    in order (those with defaults are left to them)."""

    def __init__(self, kind: type[R], run: int | None = None):
        names = [f.name for f in fields(kind) if f.default is MISSING and f.default_factory is MISSING]  # type: ignore[arg-type]
        self.kind = kind
        self._fields = attrgetter(*names)
        self._at = names.index("at")
        self._answered = "answered_at" in names  # a second time the offset moves
        self._rows = Runs(run)  # (at, the order added, the fields)
        self.offset = 0.0

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, record: R) -> None:
        values = self._fields(record)
        self._rows.add((values[self._at], self._rows.count, values))

    def close(self) -> None:
        self._rows.close(merged=True)

    def values(self) -> Iterator[tuple[float, tuple[Any, ...]]]:
        """(time, the record's fields in order) of each record, in time order, the offset not added: a pass that
        reads a few fields of every record need not make the records."""
        for row in self._rows:
            yield row[0], row[2]

    def __iter__(self) -> Iterator[R]:
        make, offset = self.kind, self.offset
        if not offset:
            for row in self._rows:
                yield make(*row[2])
            return
        for row in self._rows:
            r = make(*row[2])
            r.at += offset  # type: ignore[attr-defined]
            if self._answered and r.answered_at is not None:  # type: ignore[attr-defined]
                r.answered_at += offset  # type: ignore[attr-defined]
            yield r


def _read(path: Path) -> Iterator[tuple[Any, ...]]:
    """A run's rows, a block at a time (each block its length, then its marshal bytes: marshal.load on a file reads
    it in small pieces, several times slower)."""
    with path.open("rb") as f:
        while size := f.read(4):
            yield from marshal.loads(f.read(int.from_bytes(size, "little")))
