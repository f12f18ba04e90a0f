"""The class's gradebook: one row per submission, as gradebook.csv has it, written and read back.

    book = Gradebook.of(records, rules_order)   # from the grade records (relaychaos.records.grade)
    text = book.to_csv()                        # gradebook.csv (RFC 4180 quoting, CRLF rows)
    book = Gradebook.from_csv(text)             # and back: every row typed

The columns are the fixed ones (`submission, score, max_score, gradable, timed_out, error, seed`),
then one per rubric item with its points over every scenario set (empty: the submission has no
such item). Numbers are rounded to 2 decimals as the score is everywhere; an error keeps its
first line and the last line the relay printed. A text cell starting with = + - @ gets a leading
apostrophe so that a spreadsheet shows it rather than running it (reading takes it off again).
Published as docs/schemas/gradebook.schema.json (relaychaos.records.schemas).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence

from .base import Record
from .grade import GradeRecord

FIXED = ("submission", "score", "max_score", "gradable", "timed_out", "error", "seed")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class GradebookRow(Record, kw_only=True):
    """One submission's row: its total (0 when it could not be graded), flags, error and points per item."""

    submission: str
    score: float
    max_score: float
    gradable: bool
    timed_out: bool
    error: str = ""
    seed: int
    items: dict[str, float | None] = {}  # item -> its points over every set; None: the submission lacks it

    @classmethod
    def of(cls, record: GradeRecord, items: Sequence[str]) -> GradebookRow:
        points = record.item_points()
        return cls(
            submission=" ".join(record.submission.split()),
            score=round(record.score if record.gradable else 0.0, 2),
            max_score=round(record.max_score, 2),
            gradable=record.gradable,
            timed_out=record.timed_out,
            error=one_line(record.error or ""),
            seed=record.seed,
            items={i: (round(points[i][0] if record.gradable else 0.0, 2) if i in points else None) for i in items},
        )

    def cells(self, items: Sequence[str]) -> list[str]:
        fixed = [_text(self.submission), _num(self.score), _num(self.max_score), _flag(self.gradable)]
        fixed += [_flag(self.timed_out), _text(self.error), str(self.seed)]
        return fixed + ["" if self.items.get(i) is None else _num(self.items[i] or 0.0) for i in items]


class Gradebook(Record, kw_only=True):
    """gradebook.csv: the item columns in order, then every submission's row, by name."""

    items: list[str] = []
    rows: list[GradebookRow] = []

    @classmethod
    def of(cls, records: Iterable[GradeRecord], rules_order: Iterable[str] = ()) -> Gradebook:
        """The gradebook of these records (already in the order of its rows): the item columns are `rules_order`,
        then any other item the records hold, in the order it first appears."""
        records = list(records)
        items = list(dict.fromkeys([*rules_order, *(e.item for r in records for e in r.items)]))
        return cls(items=items, rows=[GradebookRow.of(r, items) for r in records])

    def to_csv(self) -> str:
        out = _Lines()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow([*FIXED, *self.items])
        for row in self.rows:
            writer.writerow(row.cells(self.items))
        return "".join(out.lines)

    @classmethod
    def from_csv(cls, text: str) -> Gradebook:
        """A gradebook.csv read back; ValueError naming the row and column when a cell is not what it must be."""
        lines = list(csv.reader(text.splitlines()))
        if not lines or tuple(lines[0][: len(FIXED)]) != FIXED:
            raise ValueError(f"not a gradebook: its first row must start with {', '.join(FIXED)}")
        items = lines[0][len(FIXED) :]
        rows = []
        for n, cells in enumerate(lines[1:], 2):
            fixed = dict(zip(FIXED, cells, strict=False))
            data = {
                "submission": _untext(fixed.get("submission", "")),
                "score": _number(fixed.get("score", ""), n, "score"),
                "max_score": _number(fixed.get("max_score", ""), n, "max_score"),
                "gradable": fixed.get("gradable") == "true",
                "timed_out": fixed.get("timed_out") == "true",
                "error": _untext(fixed.get("error", "")),
                "seed": int(_number(fixed.get("seed", ""), n, "seed")),
                "items": {i: _number(c, n, i) if c else None for i, c in zip(items, cells[len(FIXED) :], strict=False)},
            }
            rows.append(GradebookRow.from_builtins(data, f"row {n} of a gradebook"))
        return cls(items=items, rows=rows)


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self.lines.append(text)
        return len(text)


def one_line(error: str) -> str:
    """An error as one line: its first line and, when the relay printed something, the last line it printed."""
    lines = [" ".join(line.split()) for line in error.strip().splitlines() if line.strip()]
    return lines[0] + (f" | last printed: {lines[-1]}" if len(lines) > 1 else "") if lines else ""


def _text(value: str) -> str:
    return "'" + value if value.startswith(FORMULA_START) else value


def _untext(value: str) -> str:
    return value[1:] if value.startswith("'") and value[1:].startswith(FORMULA_START) else value


def _num(x: float) -> str:
    x = round(float(x), 2)
    return str(int(x)) if x.is_integer() else repr(x)


def _flag(b: bool) -> str:
    return "true" if b else "false"


def _number(cell: str, row: int, column: str) -> float:
    try:
        return float(cell)
    except ValueError:
        raise ValueError(f"row {row} of a gradebook: {column} must be a number, not {cell!r}") from None
