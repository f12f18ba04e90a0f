"""The coverage grid as a picture: the row's states against the faults, each cell the scenarios that reached it.

Made from results.json's `coverage` (relaychaos.reports.results); a cell nothing reached is marked, so the
report says which combinations this run never tested.
"""

from __future__ import annotations

from relaychaos.reports.html_text import escaped


def grid_html(coverage: dict | None) -> str:
    """A table: a column per fault, a row per row state; each cell counts the scenarios (named on hover)."""
    if not coverage:
        return ""
    faults = list(coverage)
    states = list(next(iter(coverage.values())))
    empty = [(f, s) for f in faults for s in states if not coverage[f][s]]
    head = "".join(f"<th>{escaped(f)}</th>" for f in faults)
    rows = []
    for state in states:
        cells = []
        for fault in faults:
            names = coverage[fault][state]
            if names:
                cells.append(f"<td class=held title='{escaped(', '.join(names))}'>{len(names)}</td>")
            else:
                cells.append("<td class=empty title='no scenario of this run reached it'>·</td>")
        rows.append(f"<tr><th>{escaped(state)}</th>{''.join(cells)}</tr>")
    return (
        "<h2>Coverage: which fault met a transfer in which state</h2>"
        f"<p class=lede>Each cell counts the scenarios whose fault met a transfer whose ledger row was in that state "
        f"(hover for their names); {len(empty)} of {len(faults) * len(states)} cells nothing in this run reached "
        "(·).</p>"
        f"<table class=grid><tr><th>row \\ fault</th>{head}</tr>{''.join(rows)}</table>"
    )
