"""Small hand-written SVG charts for the report and the timeline pages: no plotting library, no scripts.

    latency_svg(model)        # per scenario: each channel call's time to answer, fault windows shaded
    account_rate_svg(model)   # per scenario: calls per second reaching the account system
    score_sheet_svg(results)  # per run: for each rule, the scenarios that broke it

`model` is a relaychaos.reports.timeline_model.Model; `results` a results.json as read (relaychaos.records.results).
Each returns one <svg> element (inline in a page, styled by its own attributes).
"""

from __future__ import annotations

import math

from relaychaos.records.base import UNSET
from relaychaos.records.results import ResultsFile
from relaychaos.reports.html_text import escaped
from relaychaos.reports.timeline_model import Model

COLOURS = {"ok": "#3d9a4b", "fail": "#d0417e", "info": "#c9a100", "open": "#999"}
SIDE_FILL = {"channel": "#f4a24d", "account": "#9b7fd4", "server": "#5aa0d8"}
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def nice_step(span: float, count: int) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about `count` intervals over span."""
    raw = span / max(count, 1) if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _fmt(v: float) -> str:
    return f"{v:g}" if abs(v) >= 1 or v == 0 else f"{v:.3g}"


class Frame:
    """A plotting area: x from 0 to x_max seconds, y from y_lo to y_hi (log10 when asked), with margins."""

    def __init__(
        self,
        width: int,
        height: int,
        x_max: float,
        y_lo: float,
        y_hi: float,
        log: bool = False,
        left: int = 52,
        bottom: int = 30,
        top: int = 22,
        right: int = 12,
    ):
        self.w, self.h, self.left, self.top = width, height, left, top
        self.pw, self.ph = width - left - right, height - top - bottom
        self.x_max, self.log = x_max or 1.0, log
        self.y_lo, self.y_hi = (math.log10(y_lo), math.log10(y_hi)) if log else (y_lo, y_hi)

    def x(self, t: float) -> float:
        return self.left + self.pw * min(max(t / self.x_max, 0.0), 1.0)

    def y(self, v: float) -> float:
        v = math.log10(max(v, 10**self.y_lo)) if self.log else v
        return self.top + self.ph * (1 - (v - self.y_lo) / ((self.y_hi - self.y_lo) or 1))

    def axes(self, x_label: str, y_label: str, y_ticks: list[float]) -> list[str]:
        out = [
            f'<line x1="{self.left}" y1="{self.top + self.ph}" x2="{self.left + self.pw}" y2="{self.top + self.ph}"'
            ' stroke="#888"/>'
        ]
        step = nice_step(self.x_max, 8)
        for i in range(int(self.x_max / step) + 1):
            x = self.x(i * step)
            out.append(
                f'<line x1="{x:.1f}" y1="{self.top + self.ph}" x2="{x:.1f}" y2="{self.top + self.ph + 4}" '
                f'stroke="#888"/><text x="{x:.1f}" y="{self.top + self.ph + 15}" text-anchor="middle">'
                f"{_fmt(i * step)}</text>"
            )
        for v in y_ticks:
            y = self.y(v)
            out.append(
                f'<line x1="{self.left}" y1="{y:.1f}" x2="{self.left + self.pw}" y2="{y:.1f}" stroke="#eee"/>'
                f'<text x="{self.left - 5}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v)}</text>'
            )
        out.append(
            f'<text x="{self.left + self.pw}" y="{self.h - 3}" text-anchor="end" fill="#666">{escaped(x_label)}'
            f'</text><text x="{self.left}" y="{self.top - 8}" fill="#666">{escaped(y_label)}</text>'
        )
        return out

    def shade(self, model: Model) -> list[str]:
        """The fault windows as translucent bands, each with its label as a tooltip."""
        return [
            f'<rect x="{self.x(w.t0):.1f}" y="{self.top}" width="{max(self.x(w.t1) - self.x(w.t0), 1):.1f}" '
            f'height="{self.ph}" fill="{SIDE_FILL.get(w.side, "#aaa")}" fill-opacity="0.18">'
            f"<title>{escaped(w.label)}</title></rect>"
            for w in model.windows
        ]

    def svg(self, parts: list[str], title: str, css_class: str) -> str:
        return (
            f'<svg class="{css_class}" xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
            f'viewBox="0 0 {self.w} {self.h}" role="img" {FONT}><title>{escaped(title)}</title>'
            + "".join(parts)
            + "</svg>"
        )


def latency_svg(model: Model, width: int = 640, height: int = 220) -> str:
    """Each channel call as a dot: when it was sent (x) and how long until its answer (y, ms; log when spread)."""
    calls = [b for b in model.boxes if b.lane == "channel" and b.outcome != "open"]
    ms = [max((b.t1 - b.t0) * 1000, 0.1) for b in calls] or [1.0]
    lo, hi = min(ms), max(ms)
    log = hi / lo > 50
    if log:
        lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
        ticks = [10**p for p in range(round(math.log10(lo)), round(math.log10(hi)) + 1)]
    else:
        step = nice_step(hi, 4)
        lo, hi = 0.0, step * math.ceil(hi / step)
        ticks = [i * step for i in range(round(hi / step) + 1)]
    f = Frame(width, height, model.end, lo, hi, log)
    parts = f.shade(model) + f.axes(
        "seconds since the start", "channel call: ms to answer" + (" (log)" if log else ""), ticks
    )
    for b, v in zip(calls, ms, strict=False):
        colour = COLOURS.get(b.outcome, "#999")
        fill = colour if b.outcome == "ok" else "none" if b.outcome == "info" else colour
        parts.append(
            f'<circle cx="{f.x(b.t0):.1f}" cy="{f.y(v):.1f}" r="3" fill="{fill}" stroke="{colour}">'
            f"<title>{escaped(b.label)}: {v:.1f} ms</title></circle>"
        )
    if not calls:
        parts.append(f'<text x="{f.left + 10}" y="{f.top + 20}" fill="#666">no channel calls answered</text>')
    return f.svg(parts, "latency of channel calls over time", "plot latency")


def account_rate_svg(model: Model, width: int = 640, height: int = 160) -> str:
    """Calls per second reaching the account system, in bins of a round width; debited calls in green."""
    calls = [b for b in model.boxes if b.lane == "account system"]
    bin_s = max(nice_step(model.end, 60), 0.1) if model.end > 0 else 1.0  # ≥ 0.1 s: a rate, not single calls
    bins = int(model.end / bin_s) + 1
    applied, other = [0] * bins, [0] * bins
    for b in calls:
        (applied if b.outcome == "ok" else other)[min(int(b.t0 / bin_s), bins - 1)] += 1
    peak = max([(a + o) / bin_s for a, o in zip(applied, other, strict=False)] + [1.0])
    step = nice_step(peak, 3)
    top = step * math.ceil(peak / step)
    f = Frame(width, height, bins * bin_s, 0, top)
    parts = f.shade(model) + f.axes(
        "seconds since the start",
        f"account system: calls/s (bins of {_fmt(bin_s)} s)",
        [i * step for i in range(round(top / step) + 1)],
    )
    bar = max(f.pw / bins - 1, 1)
    for i, (a, o) in enumerate(zip(applied, other, strict=False)):
        for lo, n, colour, what in ((0, a, COLOURS["ok"], "debited"), (a, o, COLOURS["fail"], "not debited")):
            if n:
                y0, y1 = f.y((lo + n) / bin_s), f.y(lo / bin_s)
                parts.append(
                    f'<rect x="{f.x(i * bin_s):.1f}" y="{y0:.1f}" width="{bar:.1f}" height="{y1 - y0:.1f}" '
                    f'fill="{colour}"><title>{n} call(s) {what} from {_fmt(i * bin_s)} s</title></rect>'
                )
    if not calls:
        parts.append(f'<text x="{f.left + 10}" y="{f.top + 20}" fill="#666">no calls reached the account system</text>')
    return f.svg(parts, "calls per second at the account system", "plot account-rate")


def _clip(text: str, chars: float) -> str:
    return text if len(text) <= chars else text[: max(int(chars) - 1, 0)] + "…"


def score_sheet_svg(results: ResultsFile, width: int = 900) -> str:
    """One row per rule: held (a green tick), not checked (the relay offers nothing it reads), or a red bar as
    long as the number of scenarios that broke it, followed by their names."""
    rules = results.rules
    total = max(len(results.scenarios), 1)
    broken_max = max([len(r.broken_in) for r in rules.values()] + [1])
    row, left, bar_w = 20, 190, 240
    parts = []
    for i, (rule, r) in enumerate(rules.items()):
        y = 8 + i * row
        n = len(r.broken_in)
        parts.append(
            f'<text x="{left - 8}" y="{y + 14}" text-anchor="end">'
            f"<title>{escaped(r.what)}</title>{escaped(rule)}</text>"
        )
        if n:
            w = max(bar_w * n / broken_max, 3)
            parts.append(
                f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{row - 7}" fill="{COLOURS["fail"]}">'
                f"<title>broken in {n} of {total} scenarios: {escaped(', '.join(r.broken_in))}</title></rect>"
                f'<text x="{left + w + 6:.1f}" y="{y + 14}" fill="#b3261e">broken in {n}: '
                f"{escaped(_clip(', '.join(r.broken_in), (width - left - w - 90) // 6))}</text>"
            )
        elif r.held is None:
            why = r.not_checked if r.not_checked is not UNSET else ""
            parts.append(f'<text x="{left}" y="{y + 14}" fill="#666"><title>{escaped(why)}</title>– not checked</text>')
        else:
            parts.append(f'<text x="{left}" y="{y + 14}" fill="{COLOURS["ok"]}">✓ held</text>')
    height = 16 + row * len(rules)
    return (
        f'<svg class="plot score-sheet" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" {FONT}><title>rule score sheet</title>{"".join(parts)}</svg>'
    )
