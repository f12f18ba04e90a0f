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
is reports.student_page.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from .atomic import write_text
from .grade_record import item_points, load, validate
from .gradebook_page import html, item_titles, order_key

__all__ = ["csv_text", "html", "merge", "write"]
FIXED = ["submission", "score", "max_score", "gradable", "timed_out", "error", "seed"]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(records: list[dict], rules_order) -> str:
    """The gradebook as CSV (RFC 4180 quoting, CRLF rows): the fixed columns, then one per rubric item.

    The item columns are `rules_order`, then any other item the records hold, in the order it
    first appears; an item a submission lacks is an empty cell."""
    rules = list(dict.fromkeys([*rules_order, *item_titles(records)]))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(FIXED + rules)
    for r in sorted(records, key=order_key):
        gradable = r.get("gradable", True)
        points = item_points(r)
        error = _one_line(r.get("error") or "")
        writer.writerow(
            [
                _text(" ".join(r["submission"].split())),
                _num(r["score"] if gradable else 0),
                _num(r["max_score"]),
                _flag(gradable),
                _flag(r.get("timed_out", False)),
                _text(error),
                r["seed"],
            ]
            + [_num(points[rule][0] if gradable else 0) if rule in points else "" for rule in rules]
        )
    return out.getvalue()


def _one_line(error: str) -> str:
    """An error as one line: its first line and, when the relay printed something, the last line it printed."""
    lines = [" ".join(line.split()) for line in error.strip().splitlines() if line.strip()]
    return lines[0] + (f" | last printed: {lines[-1]}" if len(lines) > 1 else "") if lines else ""


def _text(value: str) -> str:
    return "'" + value if value.startswith(FORMULA_START) else value


def _num(x) -> str:
    x = round(float(x), 2)
    return str(int(x)) if x.is_integer() else repr(x)


def _flag(b) -> str:
    return "true" if b else "false"


def write(records: list[dict], folder: Path, rules_order=()) -> list[Path]:
    """Write gradebook.csv and gradebook.html into `folder`, each atomically; returns their paths."""
    folder = Path(folder)
    return [
        write_text(folder / "gradebook.csv", csv_text(records, rules_order)),
        write_text(folder / "gradebook.html", html(records)),
    ]


def merge(dirs) -> list[dict]:
    """The records of every shard's output folder, each submission once, sorted by name.

    ValueError, naming the files, when a folder is missing, a record is unusable, or one
    submission path was graded in two shards with different seeds or different results."""
    seen: dict[str, tuple[Path, dict]] = {}
    for folder in map(Path, dirs):
        for path in _records_in(folder):
            record = load(path)
            record.setdefault("folder", path.parent.name)  # where its own page is, beside it
            problems = validate(record)
            if problems:
                raise ValueError(f"{path}: not a usable grade record: {'; '.join(problems[:5])}")
            if record["path"] in seen:
                _same_or_refuse(*seen[record["path"]], path, record)
            else:
                seen[record["path"]] = (path, record)
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


def _same_or_refuse(first: Path, a: dict, second: Path, b: dict) -> None:
    if a["seed"] != b["seed"]:
        raise ValueError(
            f"{first} and {second} grade the same submission {a['path']} with different seeds "
            f"({a['seed']} and {b['seed']}): the shards come from different runs; merge one run's shards"
        )
    if a != b:
        fields = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        raise ValueError(
            f"{first} and {second} grade the same submission {a['path']} differently "
            f"(fields {', '.join(fields)}): it was graded twice; keep one of them"
        )
