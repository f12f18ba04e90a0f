"""The class's gradebook as one self-contained HTML page (no network: inline CSS and SVG only).

    page = html(records)      # records as reports.grade_record describes them

Top to bottom: what graded (date, rubric and its version, seed, relaychaos's version, sandbox
level); the score histogram and statistics over every submission, a submission that could
not be graded counted apart (its own bar; the statistics give it as 0 and say how many); a
grid of students × rubric items, each cell linking to the student's own page
(reports.student_page, `submissions/<folder>/report.html`); each item's share of the class
at full points and its most common failure, shown from that scenario's incident: the part of
the report about the item's own rules, never cut before it; every submission with its score
and error. Every piece of text from a record is escaped: names and reports are the students'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from relaychaos.records.base import UNSET
from relaychaos.records.grade import GradeRecord
from relaychaos.reports.html_text import escaped

from .grade_summary import num, sandbox
from .html import STYLE

EXTRA_STYLE = """
.bar { display: inline-block; width: 10em; height: .8em; background: #eee; vertical-align: middle; }
.bar > span { display: block; height: 100%; background: #176b2c; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
table.grid { width: auto; } table.grid td { text-align: center; padding: .15em .35em; font-size: 12.5px; }
table.grid th.item { vertical-align: bottom; font-weight: 500; }
table.grid th.item > div { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; max-height: 16em;
  overflow: hidden; text-overflow: ellipsis; }
td.full { background: #dff0e1; } td.lost { background: #f7d7d4; } td.part { background: #fbecc7; }
td.none { background: #eee; color: #777; } td a { color: inherit; text-decoration: none; display: block; }
.meta td { border: none; padding: .1em .8em .1em 0; }
"""
BINS = 10


def order_key(record: GradeRecord) -> tuple[str, str, str]:
    """Submissions in the order people look for them: by name, ignoring case."""
    return (record.submission.casefold(), record.submission, record.path)


def percent(record: GradeRecord) -> float:
    if not record.gradable:
        return 0.0
    return 100.0 * record.score / record.max_score if record.max_score else 0.0


def html(records: list[GradeRecord]) -> str:
    """The whole page."""
    records = sorted(records, key=order_key)
    graded = [r for r in records if r.gradable]
    return "\n".join(
        [
            f"<!doctype html><meta charset=utf-8><title>relaychaos gradebook: {len(records)} submissions</title>",
            f"<style>{STYLE}{EXTRA_STYLE}</style>",
            f"<h1>relaychaos gradebook: {len(records)} submissions</h1>",
            header(records),
            "<h2>Scores</h2>",
            statistics(records),
            histogram(records),
            "<h2>Students × rubric items</h2>",
            grid(records),
            "<h2>Rubric items: share of the class at full points, and the most common failure</h2>",
            items_section(graded),
            "<h2>Submissions</h2>",
            submissions_table(records),
        ]
    )


def header(records: list[GradeRecord]) -> str:
    """What graded: the dates, rubrics, seeds, versions and sandbox levels the records hold (each once)."""

    def values(get: Callable[[GradeRecord], object]) -> str:
        found = Counter(v for v in map(get, records) if v not in (None, ""))
        return "; ".join(f"{v}" + (f" ({n})" if len(found) > 1 else "") for v, n in found.items()) or "not recorded"

    dates = sorted({r.graded_at[:10] for r in records if r.graded_at})
    rows = [
        ("graded", " to ".join(dict.fromkeys([dates[0], dates[-1]])) if dates else "not recorded"),
        ("rubric", values(_rubric)),
        ("seed", values(lambda r: r.seed)),
        ("relaychaos", values(lambda r: r.harness.version)),
        ("sandbox", values(lambda r: sandbox(r.sandbox))),
    ]
    return (
        "<table class=meta>"
        + "".join(f"<tr><td><b>{escaped(k)}</b></td><td>{escaped(v)}</td></tr>" for k, v in rows)
        + "</table>"
    )


def _rubric(r: GradeRecord) -> str:
    name, version = (r.rubric.name, r.rubric.version) if r.rubric else ("?", 1)
    return f"{name} (v{version}, {num(r.max_score)} points)"


def statistics(records: list[GradeRecord]) -> str:
    if not records:
        return "<p>No submissions.</p>"
    pcts = sorted(percent(r) for r in records)
    median = (pcts[len(pcts) // 2] + pcts[(len(pcts) - 1) // 2]) / 2
    ungradable = sum(1 for r in records if not r.gradable)
    cut = sum(1 for r in records if r.timed_out and not r.gradable)
    partial = sum(1 for r in records if r.timed_out and r.gradable)  # written while running
    return (
        f"<p>Over all {len(records)} submissions (a submission that could not be graded counts as 0): median "
        f"{num(median)}%, mean {num(sum(pcts) / len(pcts))}%, lowest {num(pcts[0])}%, highest {num(pcts[-1])}%. "
        f"{len(records) - ungradable} graded, {ungradable} could not be graded"
        + (f" ({cut} of them ran out of time: regrade with a larger --budget-s)" if cut else "")
        + (f"; {partial} partial, written while grading was still running" if partial else "")
        + ".</p>"
    )


def histogram(records: list[GradeRecord]) -> str:
    """Hand-drawn SVG: one bar per 10% of max_score (the last bin holds 100%), then one for 'not graded'."""
    counts = [0] * BINS + [sum(1 for r in records if not r.gradable)]
    for r in records:
        if r.gradable:
            counts[min(BINS - 1, max(0, int(percent(r) // (100 / BINS))))] += 1
    labels = [f"{i * 10}–{(i + 1) * 10}%" for i in range(BINS)] + ["not graded"]
    top = max(counts) or 1
    width, base, tall = 56, 200, 170
    out = [
        f'<svg class=histogram role=img viewBox="0 0 {40 + len(counts) * width} 240" '
        f'width="{40 + len(counts) * width}" height=240 aria-label="histogram of {len(records)} scores">',
        f'<line x1=30 y1={base} x2={30 + len(counts) * width} y2={base} stroke="#888"/>',
    ]
    for i, count in enumerate(counts):
        h, x = round(tall * count / top), 34 + i * width
        fill = "#b3261e" if i == BINS else "#3b6ea5"
        out.append(
            f'<rect x={x} y={base - h} width={width - 8} height={h} fill="{fill}">'
            f"<title>{escaped(labels[i])}: {count}</title></rect>"
        )
        out.append(f"<text x={x + (width - 8) / 2} y={base - h - 4} text-anchor=middle>{count}</text>")
        out.append(f"<text x={x + (width - 8) / 2} y={base + 16} text-anchor=middle>{escaped(labels[i])}</text>")
    out.append("</svg>")
    return "\n".join(out)


def item_titles(records: list[GradeRecord]) -> dict[str, str]:
    """Every rubric item the records hold, in the order they first appear, with its title."""
    out: dict[str, str] = {}
    for r in records:
        for entry in r.items:
            out.setdefault(entry.item, entry.title)
    return out


def _link(record: GradeRecord, text: str) -> str:
    folder = record.folder if record.folder is not UNSET else None
    return f'<a href="submissions/{escaped(folder)}/report.html">{text}</a>' if folder else text


def grid(records: list[GradeRecord]) -> str:
    """One row per student, one column per item: its points, coloured full / partial / lost, linking to the page."""
    titles = item_titles(records)
    if not records or not titles:
        return "<p>Nothing graded.</p>"
    head = "".join(f'<th class=item title="{escaped(t)}"><div>{escaped(t)}</div></th>' for t in titles.values())
    rows = [f"<table class=grid><tr><th>student</th><th>score</th>{head}</tr>"]
    for r in records:
        points = r.item_points()
        cells = []
        for item in titles:
            got, most = points.get(item, (0.0, 0.0))
            if not r.gradable:
                cls, text = "none", "–"
            else:
                cls = "full" if got >= most - 1e-9 else "lost" if got <= 1e-9 else "part"
                text = num(got)
            cells.append(f'<td class={cls} title="{escaped(titles[item])}">{_link(r, text)}</td>')
        score = num(r.score) if r.gradable else "not graded"
        rows.append(
            f"<tr><td style='text-align:left'>{_link(r, escaped(r.submission))}</td>"
            f"<td class=num>{escaped(score)}</td>{''.join(cells)}</tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def sections(text: str, rules: Iterable[str]) -> str:
    """The parts of an incident report about `rules` (each part starts with `[rule]`), the head kept; the whole
    text when none is."""
    parts = text.split("\n\n")
    mine = [p for p in parts if any(p.startswith(f"[{r}]") for r in rules)]
    return "\n\n".join([parts[0], *mine]) if mine and not parts[0].startswith("[") else "\n\n".join(mine) or text


def items_section(graded: list[GradeRecord]) -> str:
    if not graded:
        return "<p>No submission could be graded.</p>"
    rows = ["<table><tr><th>item</th><th>checked by</th><th>at full points</th><th></th></tr>"]
    examples = []
    for item, title in item_titles(graded).items():
        full = sum(1 for r in graded if _full(r.item_points().get(item)))
        share = 100.0 * full / len(graded)
        rules = next(e.rules for r in graded for e in r.items if e.item == item)
        rows.append(
            f"<tr><td>{escaped(title)}</td><td><code>{escaped(', '.join(rules))}</code></td>"
            f"<td class=num>{full} of {len(graded)} ({num(share)}%)</td>"
            f'<td><span class=bar><span style="width:{share:.1f}%"></span></span></td></tr>'
        )
        examples.append(most_common_failure(graded, item, title, rules))
    rows.append("</table>")
    return "\n".join(rows + [e for e in examples if e])


def _full(points: tuple[float, float] | None) -> bool:
    return points is not None and points[0] >= points[1] - 1e-9


def most_common_failure(graded: list[GradeRecord], item: str, title: str, rules: list[str]) -> str | None:
    """The scenario that broke `item` in the most submissions, with the first such submission's incident."""
    where = Counter(f.incident for r in graded for e in r.items if e.item == item for f in e.failures)
    if not where:
        return None
    scenario, count = where.most_common(1)[0]
    lost = sum(1 for r in graded if not _full(r.item_points().get(item)))
    first = next(r for r in graded for e in r.items if e.item == item for f in e.failures if f.incident == scenario)
    incident = first.incidents_by_id().get(scenario)
    text = sections(incident.text, rules) if incident else "(no incident report recorded)"
    return (
        f"<h3>{escaped(title)}: lost by {lost} of {len(graded)}</h3><p>Most often in scenario <code>{escaped(scenario)}"
        f"</code> ({count} submission(s)); from {_link(first, '<b>' + escaped(first.submission) + '</b>')}:</p>"
        f"<pre>{escaped(text)}</pre>"
    )


def submissions_table(records: list[GradeRecord]) -> str:
    rows = ["<table><tr><th>submission</th><th>score</th><th>%</th><th>graded</th><th>seed</th><th>error</th></tr>"]
    for r in records:
        state = "yes" if r.gradable else "<span class=broken>no</span>"
        state += ", timed out" if r.timed_out else ""
        score = r.score if r.gradable else 0
        rows.append(
            f"<tr><td>{_link(r, escaped(r.submission))}</td><td class=num>{num(score)} / "
            f"{num(r.max_score)}</td><td class=num>{num(percent(r))}</td><td>{state}</td>"
            f"<td class=num>{escaped(r.seed)}</td><td>{_error(r)}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _error(record: GradeRecord) -> str:
    error = record.error or ""
    return f"<pre>{escaped(error)}</pre>" if "\n" in error else escaped(error)
