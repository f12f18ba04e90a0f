"""The class's gradebook as one self-contained HTML page (no network: inline CSS and SVG only).

    page = html(records)      # records as reports.grade_record describes them

It shows the score histogram (10 bins of the share of max_score, gradable submissions only),
each rule's pass rate (the share of gradable submissions with full points on it, all scenario
sets together), the rules most often broken with one example incident each (from the first
submission, by name, that broke it), and every submission with its score and error. Every piece
of text from a record is escaped: names and incident reports are the students' to choose.
"""
from __future__ import annotations

from html import escape

from .grade_record import incidents, rule_points
from .grade_summary import num
from .html import STYLE

EXTRA_STYLE = """
.bar { display: inline-block; width: 10em; height: .8em; background: #eee; vertical-align: middle; }
.bar > span { display: block; height: 100%; background: #176b2c; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
"""
BINS = 10
MOST_BROKEN = 5


def _e(text) -> str:
    return escape(str(text), quote=True)


def order_key(record: dict) -> tuple:
    """Submissions in the order people look for them: by name, ignoring case."""
    return (record["submission"].casefold(), record["submission"], record["path"])


def html(records: list[dict]) -> str:
    """The whole page."""
    records = sorted(records, key=order_key)
    graded = [r for r in records if r.get("gradable", True)]
    pcts = sorted(percent(r) for r in graded)
    median = (pcts[len(pcts) // 2] + pcts[(len(pcts) - 1) // 2]) / 2 if pcts else None
    stats = (f"median {num(median)}%, mean {num(sum(pcts) / len(pcts))}%" if pcts else "no scores")
    timed_out = sum(1 for r in records if r.get("timed_out"))
    return "\n".join([
        f"<!doctype html><meta charset=utf-8><title>relaychaos gradebook: {len(records)} submissions</title>",
        f"<style>{STYLE}{EXTRA_STYLE}</style>",
        f"<h1>relaychaos gradebook: {len(records)} submissions</h1>",
        f"<p>{len(graded)} graded, {len(records) - len(graded)} could not be graded, {timed_out} timed out "
        f"(partial results). Scores: {stats}.</p>",
        "<h2>Scores</h2>", histogram(pcts),
        "<h2>Rules: share of the class at full points</h2>", pass_rate_table(graded),
        "<h2>Rules most often broken</h2>", most_broken(graded),
        "<h2>Submissions</h2>", submissions_table(records)])


def percent(record: dict) -> float:
    return 100.0 * record["score"] / record["max_score"] if record.get("max_score") else 0.0


def histogram(pcts: list[float]) -> str:
    """Hand-drawn SVG: one bar per 10% of max_score (the last bin holds 100%), its count above it."""
    counts = [0] * BINS
    for p in pcts:
        counts[min(BINS - 1, max(0, int(p // (100 / BINS))))] += 1
    top = max(counts) or 1
    width, base, tall = 56, 200, 170
    out = [f'<svg class=histogram role=img viewBox="0 0 {40 + BINS * width} 240" width="{40 + BINS * width}" '
           f'height=240 aria-label="histogram of {len(pcts)} scores">',
           f'<line x1=30 y1={base} x2={30 + BINS * width} y2={base} stroke="#888"/>']
    for i, count in enumerate(counts):
        h = round(tall * count / top)
        x = 34 + i * width
        label = f"{i * 10}–{(i + 1) * 10}%"
        out.append(f'<rect x={x} y={base - h} width={width - 8} height={h} fill="#3b6ea5">'
                   f"<title>{_e(label)}: {count}</title></rect>")
        out.append(f'<text x={x + (width - 8) / 2} y={base - h - 4} text-anchor=middle>{count}</text>')
        out.append(f'<text x={x + (width - 8) / 2} y={base + 16} text-anchor=middle>{_e(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def rule_texts(records: list[dict]) -> dict[str, str]:
    """Every rule the records hold, in the order they first appear, with its sentence."""
    out: dict[str, str] = {}
    for r in records:
        for entry in r.get("rules", []):
            out.setdefault(entry["rule"], entry.get("what", ""))
    return out


def pass_rate_table(graded: list[dict]) -> str:
    if not graded:
        return "<p>No submission could be graded.</p>"
    rows = ["<table><tr><th>rule</th><th>what must hold</th><th>at full points</th><th></th></tr>"]
    for rule, what in rule_texts(graded).items():
        full = sum(1 for r in graded if _full(rule_points(r).get(rule)))
        share = 100.0 * full / len(graded)
        rows.append(f"<tr><td><code>{_e(rule)}</code></td><td>{_e(what)}</td>"
                    f"<td class=num>{full} of {len(graded)} ({num(share)}%)</td>"
                    f'<td><span class=bar><span style="width:{share:.1f}%"></span></span></td></tr>')
    rows.append("</table>")
    return "\n".join(rows)


def _full(points) -> bool:
    return points is not None and points[0] >= points[1] - 1e-9


def broken_by(graded: list[dict]) -> dict[str, list[dict]]:
    """Per rule, the submissions (by name) in which some scenario broke it, most often broken first."""
    out: dict[str, list[dict]] = {rule: [] for rule in rule_texts(graded)}
    for r in graded:
        for rule in {e["rule"] for e in r.get("rules", []) if e.get("broken_in")}:
            out[rule].append(r)
    order = list(out)
    return dict(sorted(((k, v) for k, v in out.items() if v), key=lambda kv: (-len(kv[1]), order.index(kv[0]))))


def most_broken(graded: list[dict]) -> str:
    by_rule = broken_by(graded)
    if not by_rule:
        return "<p>No rule was broken by any graded submission.</p>"
    texts = rule_texts(graded)
    out = []
    for rule, subs in list(by_rule.items())[:MOST_BROKEN]:
        first = subs[0]
        entries = [e for e in first["rules"] if e["rule"] == rule and e.get("broken_in")]
        example = next((text for e in entries for text in incidents(first, e)), None)
        out.append(f"<h3><code>{_e(rule)}</code>: broken by {len(subs)} of {len(graded)} submissions</h3>")
        out.append(f"<p>{_e(texts[rule])}. Example from <b>{_e(first['submission'])}</b>, broken in "
                   f"{_e(', '.join(s for e in entries for s in e['broken_in']))}:</p>")
        out.append(f"<pre>{_e(example)}</pre>" if example else "<p>(no incident report recorded)</p>")
    return "\n".join(out)


def submissions_table(records: list[dict]) -> str:
    rows = ["<table><tr><th>submission</th><th>score</th><th>%</th><th>graded</th><th>seed</th>"
            "<th>error</th></tr>"]
    for r in records:
        gradable = r.get("gradable", True)
        state = "yes" if gradable else "<span class=broken>no</span>"
        state += ", timed out" if r.get("timed_out") else ""
        score = r["score"] if gradable else 0
        rows.append(f"<tr><td>{_e(r['submission'])}</td><td class=num>{num(score)} / {num(r['max_score'])}</td>"
                    f"<td class=num>{num(percent(r) if gradable else 0)}</td><td>{state}</td>"
                    f"<td class=num>{_e(r['seed'])}</td><td>{_e(r.get('error') or '')}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)
