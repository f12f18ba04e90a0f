"""One submission's own page: what an instructor hands a student (one self-contained HTML file, no network).

    page = html(record)       # a record as reports.grade_record describes it; written beside it as report.html

The score (or why there is none, with what the relay printed last), each rubric item with
its points and, when lost, the scenarios that showed it and the one-line verdicts; then each
incident once, with its timeline. Only what the record holds, every text as a student reads
it (reports.student_text), every piece of it escaped. All scenario sets are shown: the page
is the instructor's to hand out, after the due date or with the hidden scenarios removed.
"""

from __future__ import annotations

from relaychaos.records.base import UNSET
from relaychaos.records.grade import GradeRecord, Incident
from relaychaos.reports.html_text import escaped

from .grade_summary import facts, headline, num, output_tail
from .html import STYLE

EXTRA_STYLE = """
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.lost td:first-child { border-left: 4px solid #b3261e; } tr.kept td:first-child { border-left: 4px solid #176b2c; }
"""


def html(record: GradeRecord) -> str:
    name = record.submission
    out = [
        f"<!doctype html><meta charset=utf-8><title>relaychaos: {escaped(name)}</title>",
        f"<style>{STYLE}{EXTRA_STYLE}</style>",
        f"<h1>{escaped(name)}: {escaped(headline(record))}</h1>",
        f"<p class=lede>Graded {escaped(record.graded_at or '')} with rubric "
        f"{escaped(record.rubric.name if record.rubric else '?')}, seed {escaped(record.seed)}, relaychaos "
        f"{escaped(record.harness.version)}.</p>",
        "<ul>" + "".join(f"<li>{escaped(f)}</li>" for f in facts(record)) + "</ul>",
    ]
    if output_tail(record):
        out += ["<h2>What the relay printed last</h2>", f"<pre>{escaped(output_tail(record))}</pre>"]
    if record.gradable:
        out += ["<h2>Rubric</h2>", items_table(record)]
        incidents = record.incidents
        if incidents:
            out.append(f"<h2>Incidents ({len(incidents)})</h2>")
            out += [incident(i) for i in incidents]
    return "\n".join(out)


def items_table(record: GradeRecord) -> str:
    rows = ["<table><tr><th>behaviour</th><th>points</th><th>checked by</th><th>what broke it</th></tr>"]
    for item in record.items:
        lost = bool(item.broken_in)
        why = "".join(
            f"<li><a href='#{escaped(f.incident)}'>{escaped(f.incident)}</a>: {escaped(w)}</li>"
            for f in item.failures
            for w in f.why
        )
        label = "" if item.set == "visible" else f" ({item.set.replace('_', ' ')} scenarios)"
        if item.not_checked is not UNSET:
            rows.append(
                f"<tr class=unchecked><td>{escaped(item.title)}</td><td class=num>not checked</td>"
                f"<td><code>{escaped(', '.join(item.rules))}</code></td><td>{escaped(item.not_checked)}</td></tr>"
            )
            continue
        rows.append(
            f"<tr class={'lost' if lost else 'kept'}><td>{escaped(item.title)}{escaped(label)}</td>"
            f"<td class=num>{num(item.points)} / {num(item.max_points)}</td>"
            f"<td><code>{escaped(', '.join(item.rules))}</code></td>"
            f"<td>{'<ul class=verdicts>' + why + '</ul>' if why else 'held in every scenario'}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def incident(i: Incident) -> str:
    rules = ", ".join(i.rules)
    return (
        f"<div class=card id='{escaped(i.id)}'><h3>Scenario <code>{escaped(i.scenario)}</code>"
        f"{': ' + escaped(rules) if rules else ''}</h3><pre>{escaped(i.text)}</pre></div>"
    )
