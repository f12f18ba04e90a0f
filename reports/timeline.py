"""The timeline page of one history: one self-contained HTML file (no network), after Jepsen's timeline.html.

    write(history, Path("timelines/race-32-two-relays.html"))
    relaychaos timeline runs/<stamp>/histories/race-32-two-relays.jsonl.gz [--out FILE]

One lane per actor (the channel, with a row per concurrent request; each relay; the
batch runs; the account system, from its own call log), each operation a box from
invoke to completion coloured ok / definite failure / indeterminate, fault windows
shaded across every lane, kills and starts as marks, and the verdicts listed above:
the selected verdict's events are highlighted. Hover a box for what it was; click it
for the events' fields. The data is relaychaos.reports.timeline_model; the drawing is
timeline_page.js, inlined.
"""

from __future__ import annotations

from pathlib import Path

from relaychaos.atomic import write_text
from relaychaos.checkers import landing
from relaychaos.checkers.verdict import Verdict
from relaychaos.history import History
from relaychaos.reports import plots
from relaychaos.reports.html_text import escaped
from relaychaos.reports.timeline_model import Model, build

SCRIPT = Path(__file__).with_name("timeline_page.js")
SHOWN_PER_RULE = 12  # verdict buttons listed per rule before "N more"

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #222; background: #fff; }
header, section { margin: 0 1.2em; } h1 { font-size: 1.35em; margin: .7em 0 .2em; }
.sub { color: #555; margin: 0 0 .6em; } code { font-size: 12.5px; }
#verdicts { margin: .3em 1.2em; max-height: 24vh; overflow-y: auto; font-size: 13px; }
.rulegroup { margin: .15em 0; } .rule { font-weight: 600; color: #b3261e; } .count { color: #777; }
.verdict { font: 12px system-ui, sans-serif; border: 1px solid #e3b4b0; background: #fff7f6; border-radius: 9px;
  padding: 0 .55em; margin: 0 .1em; cursor: pointer; }
details.more { display: inline; } details.more summary { display: inline; cursor: pointer; color: #245; }
.verdict.selected { background: #b3261e; color: #fff; border-color: #b3261e; }
#selected { margin: .3em 1.2em; padding: .35em .7em; border-left: 5px solid #b3261e; background: #fff7f6;
  font-size: 13px; } #selected:empty { display: none; } #selected .clause { color: #555; font-style: italic; }
.held { color: #176b2c; font-weight: 600; margin: .4em 1.2em; }
#controls { margin: .2em 1.2em .4em; display: flex; gap: .6em; align-items: center; flex-wrap: wrap; font-size: 13px; }
#controls button, #detail button { font: inherit; padding: .1em .6em; }
.key { display: inline-block; width: 1.1em; height: .8em; border: 1px solid #888; vertical-align: -1px; }
#timeline { display: flex; border-top: 1px solid #ccc; border-bottom: 1px solid #ccc; }
#lanes { flex: 0 0 130px; } #scroll { flex: 1; overflow-x: auto; }
rect.lane { fill: #fff; } rect.lane.odd { fill: #f5f6f8; }
.lanename { font-weight: 600; font-size: 12px; } .lanerows { fill: #777; font-size: 11px; }
.tick { stroke: #e4e4e4; } .ticklabel { font-size: 10.5px; fill: #666; }
.box { stroke-width: 1; cursor: pointer; } .box.ok { fill: #b3f3b5; stroke: #5fae62; }
.box.fail { fill: #feb5da; stroke: #d0417e; } .box.info { fill: #fffdb9; stroke: #c9a100; }
.box.open { fill: #fffdb9; stroke: #c9a100; stroke-dasharray: 3 2; } .box.up { fill: #9bb7d4; stroke: none; }
.label, .flabel { font-size: 10px; pointer-events: none; fill: #222; }
.window { opacity: .13; pointer-events: none; } .fault { opacity: .55; cursor: pointer; }
.channel { fill: #f4a24d; } .account { fill: #9b7fd4; } .server { fill: #5aa0d8; }
.mark { stroke-width: 2; cursor: pointer; } .mark.kill { stroke: #b3261e; fill: none; stroke-width: 2.5; }
.mark.start { fill: #2e8b3e; stroke: #1d5e28; } .mark.start-failed { fill: #b3261e; stroke: #b3261e; }
.mark.nemesis { fill: #5aa0d8; stroke: #2d6b9e; } .mark.tampered { fill: #000; stroke: #000; }
.markline { stroke-width: 1; stroke-dasharray: 2 3; pointer-events: none; } .markline.kill { stroke: #b3261e88; }
.markline.start { stroke: #2e8b3e66; } .markline.nemesis, .markline.tampered, .markline.start-failed { stroke: none; }
svg.focus .box:not(.hit), svg.focus .mark:not(.hit), svg.focus .label:not(.hit) { opacity: .22; }
.box.hit { stroke: #b3261e; stroke-width: 2.2; } .mark.hit { stroke-width: 3; }
#tip { position: fixed; display: none; background: #222e; color: #fff; padding: .4em .6em; border-radius: 4px;
  font-size: 12px; max-width: 34em; pointer-events: none; z-index: 3; }
#detail { display: none; position: fixed; right: 1em; bottom: 1em; width: 34em; max-height: 60vh; overflow: auto;
  background: #fff; border: 1px solid #aaa; box-shadow: 0 4px 18px #0003; padding: .3em .9em .8em; z-index: 2;
  font-size: 13px; }
#detail h3 { margin: .4em 0; } #detail pre { background: #f6f6f6; padding: .4em; font-size: 11.5px; margin: .2em 0; }
#close { float: right; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; margin: 1em 1.2em; }
"""

LEGEND = (
    "<span class=key style='background:#b3f3b5'></span> ok &nbsp;"
    "<span class=key style='background:#feb5da'></span> definite failure &nbsp;"
    "<span class=key style='background:#fffdb9'></span> indeterminate (info, E901) &nbsp;"
    "<span class=key style='background:#f4a24d88'></span> fault on a channel-side proxy &nbsp;"
    "<span class=key style='background:#9b7fd488'></span> on the account proxy &nbsp;"
    "<span class=key style='background:#5aa0d888'></span> in the account system &nbsp;"
    "<b style='color:#b3261e'>✕</b> kill &nbsp;<b style='color:#2e8b3e'>▲</b> start"
)


def _who(group: dict) -> str:
    """A verdict button's text: the GUID's label (or the GUID, or the run), and how many verdicts it holds."""
    name = group["label"] or group["guid"] or "the run"
    return f"{name} ×{group['count']}" if group["count"] > 1 else name


def _verdict_cards(model: Model) -> str:
    """The verdicts grouped by rule (its sentence once), one button per verdict; the selected one is spelled out."""
    if not model.verdicts:
        return "<p class=held>Every rule held in this history.</p>"
    groups: dict[str, list[tuple[int, dict]]] = {}
    for i, v in enumerate(model.verdicts):
        groups.setdefault(v["rule"], []).append((i, v))
    out = []
    for rule, items in groups.items():
        buttons = [
            f"<button class=verdict data-v={i} title='{escaped(v['summary'])}'>{escaped(_who(v))}</button>"
            for i, v in items
        ]
        if len(buttons) > SHOWN_PER_RULE:  # a soak breaks a rule for hundreds of GUIDs: the rest on demand
            buttons[SHOWN_PER_RULE:] = [
                f"<details class=more><summary>{len(buttons) - SHOWN_PER_RULE} more"
                f"</summary>{''.join(buttons[SHOWN_PER_RULE:])}</details>"
            ]
        out.append(
            f"<div class=rulegroup><span class=rule>{escaped(rule)}</span> — {escaped(items[0][1]['text'])} "
            f"{''.join(buttons)}</div>"
        )
    return "<div id=verdicts>" + "".join(out) + "</div><p id=selected></p>"


def _landing_cards(history: History) -> str:
    """Each landing claim of the scenario: LANDED, or what the history shows instead (not exercised)."""
    landings = landing.judge(history)
    if not landings:
        return ""
    items = "".join(
        f"<li><b class={'held' if x.landed else 'broken'}>{escaped(x.status)}</b> {escaped(x.claim)} — "
        f"{escaped(x.why)}</li>"
        for x in landings
    )
    missed = any(x.missed for x in landings)
    verdict = "not exercised: a fault met nothing it aimed at" if missed else "every fault met its transfer"
    return (
        f"<details class=landing {'open' if missed else ''}><summary>Landing claims: {verdict}</summary>"
        f"<ul>{items}</ul></details>"
    )


def render(history: History, verdicts: list[Verdict] | None = None) -> str:
    """The whole page for one history (verdicts: what the checkers find, unless given)."""
    model = build(history, verdicts)
    sc = model.scenario
    name, relay = sc.get("name", "history"), sc.get("relay", "?")
    n = len(model.verdicts)
    head = (
        f"<h1>{escaped(name)} <span style='font-weight:400'>on relay <code>{escaped(relay)}</code></span></h1>"
        f"<p class=sub>{escaped(sc.get('description', ''))} — {len(history)} events over {model.end:.2f} s; "
        f"{n} verdict{'s' if n != 1 else ''}{': pick one to highlight its events' if n else ''}.</p>"
    )
    controls = (
        "<div id=controls><button id=zoomout title='zoom out'>−</button><button id=zoomin title='zoom in'>+"
        "</button><label>x axis <select id=scale><option value=0.35 selected>mixed: time and event order"
        "</option><option value=1>real time</option><option value=0>event order</option></select></label>"
        "<button id=all>show all</button><span id=guidnote></span><span>" + LEGEND + "</span></div>"
    )
    body = (
        "<div id=timeline><svg id=lanes xmlns='http://www.w3.org/2000/svg' width=130></svg><div id=scroll>"
        "<svg id=chart xmlns='http://www.w3.org/2000/svg'></svg></div></div>"
        "<noscript><p>The timeline is drawn by a script in this page; enable JavaScript to see it.</p></noscript>"
        "<div id=tip></div><aside id=detail></aside>"
    )
    graphs = f"<section class=plots>{plots.latency_svg(model)}{plots.account_rate_svg(model)}</section>"
    return (
        "<!doctype html><html lang=en><meta charset=utf-8><meta name=viewport content='width=device-width'>"
        f"<title>timeline: {escaped(name)} on {escaped(relay)}</title><style>{STYLE}</style><header>{head}</header>"
        f"{_verdict_cards(model)}{_landing_cards(history)}{controls}{body}{graphs}"
        f"<script id=data type='application/json'>{model.to_json()}</script>"
        f"<script>{SCRIPT.read_text()}</script></html>"
    )


def write(history: History, path: Path, verdicts: list[Verdict] | None = None) -> Path:
    """Write the timeline page of a history to path (atomically); returns the path."""
    return write_text(Path(path), render(history, verdicts))
