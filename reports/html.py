"""The HTML report of a run: a page a student or a reviewer can read, made from results.json and the histories.

    python -m relaychaos.reports.html runs/<run>/results.json   (relaychaos run writes report.html itself)

It shows the relay, the score per rule (a chart and a table), and every scenario: its
outcome, its verdicts grouped by rule, and, where its history was kept (the `history`
field of its entry, relative to the run folder), its plots (channel latency, account
calls per second) and a link to its timeline page. Timelines are written beside the
report, as timelines/<scenario>.html, for every failing scenario; for any other, make
one with `relaychaos timeline HISTORY` (it lands in the same folder, and the report
links it when rewritten).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from relaychaos.atomic import write_text
from relaychaos.checkers.verdict import Verdict
from relaychaos.history import History
from relaychaos.records.base import UNSET
from relaychaos.records.results import RandomStories, ResultsFile, ScenarioResult
from relaychaos.reports import plots, timeline
from relaychaos.reports.coverage_grid import grid_html
from relaychaos.reports.grade_summary import sandbox_parts
from relaychaos.reports.html_text import escaped
from relaychaos.reports.results import RunResults
from relaychaos.reports.timeline_model import build
from relaychaos.reports.verdict_groups import verdict_groups
from relaychaos.words import Words

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; margin: 2em auto; max-width: 76em; color: #222; padding: 0 1em; }
h1 { font-size: 1.55em; margin-bottom: .2em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; width: 100%; } td, th { padding: .3em .6em; border-bottom: 1px solid #e4e4e4;
text-align: left; vertical-align: top; } th { font-weight: 600; color: #555; font-size: 13px; }
.held { color: #176b2c; font-weight: 600; } .broken, .failed, .error { color: #b3261e; font-weight: 600; }
.passed { color: #176b2c; } .skipped { color: #777; }
pre { background: #f6f6f6; padding: .8em; overflow-x: auto; font-size: 12.5px; }
details { margin: .4em 0; } summary { cursor: pointer; color: #245; }
.lede { color: #555; margin-top: 0; }
.tiles { display: flex; gap: 1em; margin: 1em 0; } .tile { border: 1px solid #ddd; border-radius: 6px;
padding: .4em 1.1em; min-width: 6em; } .tile b { display: block; font-size: 1.7em; line-height: 1.2; }
.card { border: 1px solid #e3b4b0; border-left: 6px solid #b3261e; border-radius: 6px; padding: .5em 1.1em 1em;
margin: 1.2em 0; background: #fffafa; } .card h3 { margin: .3em 0; font-size: 1.1em; }
.links a { margin-right: 1em; } .rule { font-weight: 600; color: #b3261e; } .clause { color: #555; font-style: italic; }
ul.verdicts { padding-left: 1.2em; margin: .3em 0; } ul.verdicts li { margin: .25em 0; }
.plots { display: flex; flex-wrap: wrap; gap: .8em; margin: .6em 0; }
.plots svg { background: #fff; border: 1px solid #eee; border-radius: 4px; }
code { font-size: 13px; }
"""


def scenario_name(entry: ScenarioResult) -> str:
    """The scenario's short name: its history file's name, else the test's parameter, else the test's name."""
    if entry.history:
        name = Path(entry.history).name
        for suffix in (".gz", ".jsonl"):
            name = name.removesuffix(suffix)
        return name
    return entry.name.split("[", 1)[1].rstrip("]") if "[" in entry.name else entry.name


def _verdicts(entry: ScenarioResult) -> list[Verdict]:
    """The verdicts results.json recorded for a scenario, as Verdict objects again, each once (a run's results
    may list a verdict once per test phase)."""
    seen, out = set(), []
    for v in entry.verdicts:
        key = json.dumps(v.to_builtins(), sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(Verdict(v.rule, v.guid, v.summary, tuple(v.events), tuple(v.calls), v.details, v.clause))
    return out


class Scenario:
    """One entry of results.json, with what the run folder holds for it (history, timeline)."""

    def __init__(self, entry: ScenarioResult, run_dir: Path):
        self.entry, self.name, self.run_dir = entry, scenario_name(entry), run_dir
        self.history_path: Path | None = run_dir / entry.history if entry.history else None
        self.timeline_rel = f"timelines/{self.name}.html"
        self.failed = entry.outcome in ("failed", "error")
        self._history: History | None = None

    @property
    def has_history(self) -> bool:
        return self.history_path is not None and self.history_path.is_file()

    def history(self) -> History:
        """The history the run kept for it (ValueError when it recorded none)."""
        if self.history_path is None:
            raise ValueError(f"{self.name}: results.json names no history")
        if self._history is None:  # read once: the timeline page and the plots both draw from it
            self._history = History.read(self.history_path)
        return self._history

    @property
    def has_timeline(self) -> bool:
        return (self.run_dir / self.timeline_rel).is_file()

    def links(self) -> str:
        out = []
        if self.has_timeline:
            out.append(f"<a href='{escaped(self.timeline_rel)}'>timeline</a>")
        if self.has_history:
            out.append(f"<a href='{escaped(self.entry.history)}'>history</a>")
        return f"<span class=links>{''.join(out)}</span>" if out else ""


def write_timelines(scenarios: list[Scenario]) -> list[str]:
    """Write the timeline page of every failing scenario whose history was kept; returns problems, one line each."""
    problems = []
    for sc in scenarios:
        if not (sc.failed and sc.has_history):
            continue
        try:
            history = sc.history()
            recorded = _verdicts(sc.entry)
            timeline.write(history, sc.run_dir / sc.timeline_rel, recorded or None)
        except Exception as e:  # noqa: BLE001 - a bad history, or a drawing bug, costs its timeline, never the report
            problems.append(
                f"{sc.name}: its timeline could not be drawn from {sc.entry.history}: {type(e).__name__}: {e}"
            )
    return problems


def _plots(sc: Scenario) -> str:
    try:
        model = build(sc.history(), _verdicts(sc.entry))
    except Exception as e:  # noqa: BLE001 - as in write_timelines: the report is written all the same
        return f"<p>plots unavailable: {escaped(type(e).__name__)}: {escaped(e)}</p>"
    return f"<div class=plots>{plots.latency_svg(model, 520, 200)}{plots.account_rate_svg(model, 520, 200)}</div>"


def _verdict_list(entry: ScenarioResult, words: Words) -> str:
    """The verdicts by rule: its sentence and clause once, then one line per GUID."""
    by_rule: dict[str, list[dict]] = {}
    for g in verdict_groups(_verdicts(entry), {}, words):
        by_rule.setdefault(g["rule"], []).append(g)
    items = []
    for rule, groups in by_rule.items():
        lines = []
        for g in groups:
            who = f"{words.key} <code>{escaped(g['guid'])}</code>" if g["guid"] else "the run"
            more = f" <i>(and {g['count'] - 1} more like it)</i>" if g["count"] > 1 else ""
            lines.append(f"<li>{who}: {escaped(g['summary'])}{more}</li>")
        items.append(
            f"<li><span class=rule>{escaped(rule)}</span> — {escaped(groups[0]['text'])} <span class=clause>"
            f"(contract {escaped(groups[0]['clause'])})</span><ul>{''.join(lines)}</ul></li>"
        )
    return f"<ul class=verdicts>{''.join(items)}</ul>" if items else ""


def failing_card(sc: Scenario, words: Words) -> str:
    """A failing scenario in full: its verdicts, links, plots, and the incident report as text."""
    e = sc.entry
    out = [
        f"<section class=card id='{escaped(sc.name)}'><h3><code>{escaped(sc.name)}</code> "
        f"<span class={escaped(e.outcome)}>{escaped(e.outcome)}</span> "
        f"<small>({e.duration_s:.1f} s)</small> {sc.links()}</h3>",
        _verdict_list(e, words),
    ]
    if sc.has_history:
        out.append(_plots(sc))
    if e.message:
        out.append(f"<details><summary>incident report (text)</summary><pre>{escaped(e.message)}</pre></details>")
    return "".join(out) + "</section>"


def _header(results: ResultsFile) -> list[str]:
    """The page's head: the relay, whether every rule held, when it ran, the tiles counting the outcomes."""
    s = results.summary
    missed = s.not_exercised
    verdict = "every rule held" if results.ok else "rules were broken"
    if results.ok and missed:
        verdict += f", but {missed} scenario{'s were' if missed != 1 else ' was'} not exercised"
    started = results.started_at
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else "?"
    took = f", {results.finished_at - started:.0f} s" if started and results.finished_at else ""
    tiles = "".join(
        f"<div class=tile><b class={cls}>{count}</b>{label}</div>"
        for count, cls, label in (
            (s.passed, "passed", "passed"),
            (s.failed, "failed", "failed"),
            (s.error, "error", "could not run"),
            (s.not_exercised, "skipped", "not exercised"),
            (s.skipped, "skipped", "skipped"),
        )
    )
    return [
        f"<!doctype html><html lang=en><meta charset=utf-8><title>relaychaos: {escaped(results.relay_name)}</title>",
        f"<style>{STYLE}</style>",
        f"<h1>relaychaos report: {Words.of(results.profile, results.commands).relay} "
        f"<code>{escaped(results.relay_name)}</code> — "
        f"<span class={'held' if results.ok else 'broken'}>{verdict}</span></h1>",
        f"<p class=lede>Manifest <code>{escaped(results.relay)}</code>; run started {when}{took}. Scenarios: "
        f"{s.passed} passed, {s.failed} failed, {s.error} could not run, {missed} not exercised (every "
        f"rule held, but a fault met nothing), {s.skipped} skipped.</p>",
        f"<div class=tiles>{tiles}</div>",
        sandbox_line(results.sandbox),
        env_line(results.relay_env if results.relay_env is not UNSET else {}),
        partial_line(results),
        random_stories_line(results.random_stories),
    ]


def env_line(env: dict[str, str]) -> str:
    """The relay's own variables ([env] of its relay.toml), values shown: they are its configuration, not secrets."""
    if not env:
        return ""
    pairs = ", ".join(f"<code>{escaped(k)}={escaped(v)}</code>" for k, v in sorted(env.items()))
    return f"<p class=lede>The relay's own environment ([env] of its relay.toml), given to every command: {pairs}.</p>"


def _not_exercised(scenarios: list[Scenario]) -> list[str]:
    """Each scenario whose faults met nothing: every claim that did not land, and what the history shows."""
    missed = [sc for sc in scenarios if sc.entry.outcome == "not exercised"]
    if not missed:
        return []
    out = [f"<h2>Not exercised ({len(missed)}): every rule held, but the fault met nothing, so nothing was tested</h2>"]
    for sc in missed:
        claims = "".join(
            f"<li><b>{escaped(x.status)}</b>: {escaped(x.claim)} — {escaped(x.why)}</li>"
            for x in sc.entry.landing
            if x.status != "LANDED"
        )
        out.append(
            f"<section class=card><h3><code>{escaped(sc.name)}</code> {sc.links()}</h3><ul>{claims}</ul></section>"
        )
    return out


def _every_scenario(scenarios: list[Scenario]) -> list[str]:
    """The table of every scenario: its outcome, seconds, verdicts and links (a passing one's plots and message)."""
    out = [
        "<h2>Every scenario</h2>",
        "<table><tr><th>scenario</th><th>outcome</th><th>seconds</th><th>verdicts</th><th></th></tr>",
    ]
    for sc in scenarios:
        e = sc.entry
        name = f"<code>{escaped(sc.name)}</code>"
        name = f"<a href='#{escaped(sc.name)}'>{name}</a>" if sc.failed else name
        extra = ""
        if not sc.failed and sc.has_history:
            extra = f"<details><summary>plots</summary>{_plots(sc)}</details>"
        if not sc.failed and e.message:
            extra += f"<details><summary>message</summary><pre>{escaped(e.message)}</pre></details>"
        out.append(
            f"<tr><td>{name}{extra}</td><td class={escaped(e.outcome)}>{escaped(e.outcome)}</td>"
            f"<td>{e.duration_s:.2f}</td><td>{len(_verdicts(e)) or ''}</td><td>{sc.links()}</td></tr>"
        )
    return out + ["</table>"]


def render(results: ResultsFile, run_dir: Path | None = None, problems: list[str] | None = None) -> str:
    """The whole page, from a results.json as reports.results writes it (histories read from run_dir)."""
    run_dir = run_dir or Path(".")
    scenarios = [Scenario(entry, run_dir) for entry in results.scenarios]
    out = _header(results)
    out += [f"<p class=broken>{escaped(p)}</p>" for p in problems or []]
    out += [
        "<h2>Rules</h2>",
        plots.score_sheet_svg(results),
        "<details><summary>the rules in words: what each must hold, the contract sections</summary>",
        "<table><tr><th>rule</th><th>what must hold</th><th>contract</th><th>result</th><th>broken in</th></tr>",
    ]
    for rule, r in results.rules.items():
        state = "<span class=held>held</span>" if r.held else "<span class=broken>broken</span>"
        if r.held is None:
            state = f"<span title='{escaped(r.not_checked if r.not_checked is not UNSET else '')}'>not checked</span>"
        out.append(
            f"<tr><td><code>{escaped(rule)}</code></td><td>{escaped(r.what)}</td>"
            f"<td>{escaped(r.contract)}</td>"
            f"<td>{state}</td><td>{escaped(', '.join(r.broken_in))}</td></tr>"
        )
    out.append("</table></details>")
    if results.notes:
        out += ["<h2>Notes on the relay (not verdicts)</h2>", "<ul>"]
        out += [f"<li>{escaped(n)}</li>" for n in results.notes]
        out.append("</ul>")
    failing = [sc for sc in scenarios if sc.failed]
    if failing:
        out.append(f"<h2>What broke ({len(failing)} scenario{'s' if len(failing) != 1 else ''})</h2>")
        words = Words.of(results.profile, results.commands)
        out += [failing_card(sc, words) for sc in failing]
    out += _not_exercised(scenarios)
    out.append(grid_html(results.coverage))
    out += _every_scenario(scenarios)
    if any(sc.has_history for sc in scenarios):
        out.append(
            "<p class=lede>A timeline for any scenario: <code>relaychaos timeline "
            "histories/&lt;scenario&gt;.jsonl[.gz]</code> in the run folder (written to timelines/), then "
            "<code>python -m relaychaos.reports.html results.json</code> to link it here.</p>"
        )
    return "\n".join(out) + "</html>"


def partial_line(results: ResultsFile) -> str:
    """A run cut short (Ctrl-C) says so, and how far it got; a whole run, nothing."""
    if not results.partial:
        return ""
    total = f" of {results.expected}" if results.expected else ""
    return (
        f"<p class=broken>Partial: the run was interrupted after {len(results.scenarios)}{total} scenarios; "
        "only those are judged here.</p>"
    )


def random_stories_line(machine: RandomStories | None) -> str:
    """Whether the state machine's random stories ran; when they did not, why (a named scenario had shown a bug)."""
    if machine is None:
        return ""
    if not machine.ran:
        return f"<p class=stories><b>Random stories (the state machine):</b> {escaped(machine.why_not)}.</p>"
    shrink_s = machine.shrink_s if machine.shrink_s is not UNSET else None
    shrunk = (
        ""
        if machine.shrunk is not False or shrink_s is None
        else f"; its failing story was not fully shrunk (shrinking stopped at its budget after {shrink_s:g} s)"
    )
    met = ""
    if machine.exercised is not UNSET and machine.exercised is not None:
        met = f", {machine.exercised} with a fault that met a transfer" + (
            f", {machine.unexercised} whose faults all met nothing (they tested nothing)"
            if machine.unexercised is not UNSET and machine.unexercised
            else ""
        )
    examples = machine.examples if machine.examples is not UNSET else None
    return f"<p class=stories><b>Random stories (the state machine):</b> {examples} examples run{met}{shrunk}.</p>"


def sandbox_line(level: dict[str, Any] | None) -> str:
    """The sandbox level the relay ran under, as one paragraph (results written before it had one: unknown)."""
    if not level:
        return "<p class=sandbox>Sandbox: not recorded.</p>"
    mode, enforced, missing = sandbox_parts(level)
    if not level.get("enforced"):
        return f"<p class=sandbox>Sandbox: <b>{escaped(mode)}</b>, the relay ran unconfined.</p>"
    said = f" Not enforced: {escaped('; '.join(missing))}." if missing else ""
    return f"<p class=sandbox>Sandbox: <b>{escaped(mode)}</b>: {escaped(', '.join(enforced))}.{said}</p>"


def write(results_path: Path) -> Path:
    """Write report.html beside results.json, and the failing scenarios' timelines under timelines/; its path."""
    results_path = Path(results_path)
    results = RunResults.read(results_path)
    run_dir = results_path.parent
    scenarios = [Scenario(entry, run_dir) for entry in results.scenarios]
    problems = write_timelines(scenarios)
    return write_text(results_path.with_name("report.html"), render(results, run_dir, problems))


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
