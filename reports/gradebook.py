"""The class's gradebook: every submission's grade record as one CSV and one HTML page, and shards merged.

    records = merge(["gradebook-0", "gradebook-1"])     # each <dir>/submissions/<safe-name>/grade.json
    write(records, "gradebook")                         # gradebook/gradebook.csv and gradebook.html
    relaychaos gradebook merge gradebook-* --out gradebook  # the command line (relaychaos.grading.command)

A submission is known by its `path`: the same path in two shards must be the same record
(same seed, same content), or merge refuses with both files named. The CSV has one row per
submission, by name, and a column per rubric item with its points over every scenario set,
every number rounded to 2 decimals as the score is everywhere. Every cell is one line (an
error keeps its first line and the last line the relay printed; the rest is on the
student's page). A text cell starting with
= + - or @ gets a leading apostrophe, so a spreadsheet shows a student's folder name rather
than running it as a formula. The page is reports.gradebook_page; each submission's own page
is reports.student_page. The CSV is written and read by its typed record, relaychaos.records.gradebook
(docs/schemas/gradebook.schema.json).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from relaychaos.atomic import write_text
from relaychaos.records.base import UNSET
from relaychaos.records.grade import GradeRecord
from relaychaos.records.gradebook import Gradebook

from .grade_record import load
from .gradebook_page import html, order_key

__all__ = ["csv_text", "html", "merge", "write"]


def csv_text(records: list[GradeRecord], rules_order: Iterable[str]) -> str:
    """The gradebook as CSV (RFC 4180 quoting, CRLF rows): the fixed columns, then one per rubric item.

    The item columns are `rules_order`, then any other item the records hold, in the order it
    first appears; an item a submission lacks is an empty cell."""
    return Gradebook.of(sorted(records, key=order_key), rules_order).to_csv()


def write(records: list[GradeRecord], folder: Path, rules_order: Iterable[str] = ()) -> list[Path]:
    """Write gradebook.csv and gradebook.html into `folder`, each atomically; returns their paths."""
    folder = Path(folder)
    return [
        write_text(folder / "gradebook.csv", csv_text(records, rules_order)),
        write_text(folder / "gradebook.html", html(records)),
    ]


def merge(dirs: Iterable[Path]) -> list[GradeRecord]:
    """The records of every shard's output folder, each submission once, sorted by name.

    ValueError, naming the files, when a folder is missing, a record is unusable, or one
    submission path was graded in two shards with different seeds or different results."""
    seen: dict[str, tuple[Path, GradeRecord]] = {}
    for folder in map(Path, dirs):
        for path in _records_in(folder):
            record = load(path)
            if record.folder is UNSET:
                record.folder = path.parent.name  # where its own page is, beside it
            problems = record.problems()
            if problems:
                raise ValueError(f"{path}: not a usable grade record: {'; '.join(problems[:5])}")
            if record.path in seen:
                _same_or_refuse(*seen[record.path], path, record)
            else:
                seen[record.path] = (path, record)
    return sorted((record for _, record in seen.values()), key=order_key)


def _records_in(folder: Path) -> list[Path]:
    """Every grade.json of a shard's output folder (<folder>/submissions/*/grade.json)."""
    if not folder.is_dir():
        raise ValueError(f"{folder}: no such gradebook folder")
    found = sorted(folder.glob("submissions/*/grade.json"))
    stray = sorted(set(folder.rglob("grade.json")) - set(found))
    if stray:
        raise ValueError(
            f"{folder}: {stray[0]} is not where relaychaos grade writes a record "
            f"(<folder>/submissions/<name>/grade.json): is this the right folder?"
        )
    return found


def _same_or_refuse(first: Path, a: GradeRecord, second: Path, b: GradeRecord) -> None:
    if a.seed != b.seed:
        raise ValueError(
            f"{first} and {second} grade the same submission {a.path} with different seeds "
            f"({a.seed} and {b.seed}): the shards come from different runs; merge one run's shards"
        )
    if a != b:
        x, y = a.to_builtins(), b.to_builtins()
        fields = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
        raise ValueError(
            f"{first} and {second} grade the same submission {a.path} differently "
            f"(fields {', '.join(fields)}): it was graded twice; keep one of them"
        )
