"""What a timeline page and the plots draw, derived from a history alone: lanes, boxes, marks, fault windows.

    model = build(history)          # verdicts from relaychaos.checkers.check unless given

Times are seconds since the history's first event. A Box is one operation from its
invoke to its completion (a channel call, an account call, a batch run, a runner step),
with its outcome: `ok`, `fail` (a definite failure), `info` (indeterminate) or `open`
(never completed; drawn to the end). Lanes with concurrent operations get sub-rows,
assigned greedily. Fault windows fold the nemesis events the way the checkers do
(relaychaos.checkers.facts.FaultState). Rendering only: nothing here judges.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from relaychaos import checkers
from relaychaos.checkers.calls import ChannelCall
from relaychaos.checkers.facts import Facts, FaultState
from relaychaos.checkers.verdict import Verdict
from relaychaos.history import Event, History
from relaychaos.reports.incident import describe_event
from relaychaos.reports.timeline_incident import annotate, ledger_boxes
from relaychaos.reports.verdict_groups import verdict_groups

# How each completion reads: a relay's E901 says "outcome unknown", like an unanswered call.
INDETERMINATE_CODES = {"E901"}
LARGE_FIELDS = {"rows", "stats"}  # snapshot rows and account statistics: summarised, not embedded


@dataclass
class Box:
    """One operation drawn from t0 to t1 in a lane's row; `events` are history indices, `call` an account seq."""

    lane: str
    t0: float
    t1: float
    outcome: str  # ok | fail | info | open
    label: str
    text: str
    events: tuple[int, ...] = ()
    call: int | None = None
    guid: str | None = None
    row: int = 0


@dataclass
class Mark:
    """A moment in a lane: a relay killed or started, a heal, a server fault, tampering found."""

    lane: str
    t: float
    kind: str  # kill | start | start-failed | nemesis | tampered
    label: str
    events: tuple[int, ...] = ()


@dataclass
class Window:
    """A fault in force from t0 to t1 (t1: the end, when never lifted); `side` is channel, account or server."""

    t0: float
    t1: float
    label: str
    side: str
    events: list[int] = field(default_factory=list)
    row: int = 0
    guids: list[str] = field(default_factory=list)  # the GUIDs the fault names (a hold); none: it touches all


@dataclass
class Model:
    """Everything one timeline page shows."""

    scenario: dict
    end: float
    lanes: list[tuple[str, int]]  # (lane name, rows), top to bottom
    boxes: list[Box]
    marks: list[Mark]
    windows: list[Window]
    verdicts: list[dict]
    events: dict[int, dict]  # the events the boxes and marks name, for their details
    calls: dict[int, dict]  # account calls by seq
    preselected: int = 0  # the verdict selected when the page opens (an incident's: the one production broke)

    def to_json(self) -> str:
        """The page's data, as JSON safe to put inside a <script> element."""
        data = {k: getattr(self, k) for k in ("scenario", "end", "lanes", "verdicts", "events", "calls", "preselected")}
        data.update(
            boxes=[asdict(b) for b in self.boxes],
            marks=[asdict(m) for m in self.marks],
            windows=[asdict(w) for w in self.windows],
        )
        return json.dumps(data, default=str).replace("</", "<\\/")


def pack(items: list) -> int:
    """Give each item (with t0, t1) the first row free at its t0, in order of t0; returns the rows used."""
    ends: list[float] = []
    for item in sorted(items, key=lambda i: (i.t0, i.t1)):
        row = next((r for r, end in enumerate(ends) if end < item.t0), len(ends))
        if row == len(ends):
            ends.append(0.0)
        item.row, ends[row] = row, max(item.t1, item.t0)
    return max(len(ends), 1)


def _channel_outcome(call: ChannelCall) -> str:
    if not call.completed:
        return "open"
    if not call.answered:
        return "info"
    return "ok" if call.code == "0000" else "info" if call.code in INDETERMINATE_CODES else "fail"


def channel_boxes(facts: Facts, end: float) -> list[Box]:
    """One box per channel request, from its invoke to its answer (or to giving up); `→b` names the relay
    when there are several."""
    out, events = [], {e.index: e for e in facts.events}  # a call keeps where its events are, not the events
    hubs = {events[c.index].process.split("-")[1] for c in facts.channel if events[c.index].process.count("-") >= 1}
    for c in facts.channel:
        invoke, completion = events[c.index], events[c.end_index] if c.end_index is not None else None
        t1 = completion.time - facts.start if completion else end
        parts = invoke.process.split("-")
        hub = f"→{parts[1]} " if len(hubs) > 1 and len(parts) > 1 else ""
        who = facts.labels.get(c.guid or "", c.guid or "raw")
        answer = c.code or (c.status and f"HTTP {c.status}") or ("no answer" if completion else "pending")
        if c.code and c.status and not facts.words.course:  # a keyed service's answer: its HTTP status
            answer = f"HTTP {c.status}"
        text = [describe_event(invoke, facts.words)] + ([describe_event(completion, facts.words)] if completion else [])
        out.append(
            Box(
                "channel",
                invoke.time - facts.start,
                t1,
                _channel_outcome(c),
                f"{who} {hub}{answer}",
                "\n".join(text),
                c.events,
                guid=c.guid,
            )
        )
    return out


def account_boxes(facts: Facts, end: float) -> list[Box]:
    """One box per call the account system received (its own log), from receipt to its answer."""
    out = []
    for c in facts.account_calls:
        t0 = c["received_at"] - facts.start
        t1 = c["answered_at"] - facts.start if c.get("answered_at") is not None else end
        outcome = "info" if c.get("answered_at") is None else "ok" if c.get("applied") else "fail"
        who = facts.labels.get(c.get("guid") or "", c.get("guid") or "?")
        req = c.get("request") or {}
        w = facts.words
        text = (
            f"{w.downstream} receives {req.get('amount')} {req.get('from')}→{req.get('to')} "
            f"({w.relay}'s ledger row: {c.get('ledger_status') or 'none'}); "
            f"answers {w.downstream_answer(c.get('code'))}"
            f"{' (debited)' if c.get('applied') else ''}"
        )
        out.append(
            Box(
                w.downstream,
                t0,
                t1,
                outcome,
                f"{who} {c.get('code') or '…'}",
                text,
                (),
                c.get("seq"),
                c.get("guid"),
            )
        )
    return out


def batch_boxes(facts: Facts, end: float) -> list[Box]:
    out = []
    for b in facts.batches:
        e = b.end
        outcome = "open" if e is None else "info" if e.value.get("timed_out") else "ok" if e.type == "ok" else "fail"
        args = " ".join(str(a) for a in b.invoke.value.get("argv", [])[-2:])
        text = [describe_event(b.invoke, facts.words)] + ([describe_event(e, facts.words)] if e else ["(never ended)"])
        out.append(
            Box(
                "batch runs",
                b.invoke.time - facts.start,
                (e.time - facts.start) if e else end,
                outcome,
                f"#{b.invoke.value.get('run')} {facts.words.command(b.command)} {args}",
                "\n".join(text),
                (b.invoke.index,) + ((e.index,) if e else ()),
            )
        )
    return out


def step_boxes(facts: Facts) -> list[Box]:
    """The runner's steps, so a reader sees which line of the scenario was being played."""
    out, open_ = [], {}
    for e in facts.events:
        if e.f != "step":
            continue
        if e.type == "invoke":
            open_[str(e.value.get("n"))] = e
        elif (start := open_.pop(str(e.value.get("n")), None)) is not None:
            out.append(
                Box(
                    "steps",
                    start.time - facts.start,
                    e.time - facts.start,
                    e.type,
                    f"{start.value.get('n')}: {start.value.get('step')}",
                    f"step {start.value.get('n')}: {start.value.get('step')}"
                    + (f"\nfailed: {e.value.get('error')}" if e.type == "fail" else ""),
                    (start.index, e.index),
                )
            )
    return out


def relay_marks(facts: Facts) -> tuple[list[Mark], list[Box]]:
    """Kills and starts as marks in each relay's lane, and the spans it was serving as thin boxes."""
    marks, spans, up = [], [], {}
    for e in facts.events:
        if not e.process.startswith("relay-") or e.f not in ("start", "kill") or e.type == "invoke":
            continue
        slot = e.value.get("slot") or e.process.removeprefix("relay-")  # older histories: the process names it
        if not slot:
            continue
        lane, t = f"relay {slot}", e.time - facts.start
        if e.f == "start":
            kind = "start" if e.type == "ok" else "start-failed"
            marks.append(Mark(lane, t, kind, describe_event(e, facts.words), (e.index,)))
            if e.type == "ok":
                up[slot] = e
        elif e.f == "kill":
            marks.append(Mark(lane, t, "kill", describe_event(e, facts.words), (e.index,)))
            if (started := up.pop(slot, None)) is not None:
                spans.append(_serving(lane, started, t, facts.start))
    end = facts.events[-1].time - facts.start if facts.events else 0.0
    spans += [_serving(f"relay {slot}", started, end, facts.start) for slot, started in up.items()]
    return marks, spans


def _serving(lane: str, started: Event, t1: float, start: float) -> Box:
    return Box(
        lane,
        started.time - start,
        t1,
        "up",
        f"serving (pid {started.value.get('pid')})",
        f"relay serving from its start (pid {started.value.get('pid')}, port {started.value.get('port')})",
        (started.index,),
    )


def _fault_labels(
    state: FaultState, labels: dict[str, str], downstream: str = "account system"
) -> dict[tuple[str, ...], tuple[str, str]]:
    """The faults in force, each keyed, with (label, side)."""
    out: dict[tuple[str, ...], tuple[str, str]] = {}
    for proxy, toxics in state.toxics.items():
        for name, v in toxics.items():
            attrs = ", ".join(f"{k}={a}" for k, a in (v.get("attributes") or {}).items())
            out[("toxic", proxy, name)] = (
                f"{v.get('kind')} {v.get('stream')} on {proxy} ({attrs}): {name}",
                state.sides.get(proxy) or v.get("side") or _side(proxy),
            )
    for proxy in state.disabled:
        out[("down", proxy)] = (f"{proxy} proxy disabled", state.sides.get(proxy) or _side(proxy))
    for guid in state.held:
        out[("held", guid)] = (f"{downstream} holds {labels.get(guid, guid)}", "server")
    if state.delay_ms:
        out[("delay",)] = (f"{downstream} delays answers {state.delay_ms:g} ms", "server")
    return out


def _side(proxy: str) -> str:
    """Histories recorded before proxies carried their side: hub proxies are named hub-SLOT."""
    return "channel" if proxy.startswith("hub") else "account"


def fault_windows(facts: Facts, end: float) -> tuple[list[Window], list[Mark]]:
    """The faults in force over time, folded like the checkers fold them, and the nemesis's moments as marks."""
    state, windows, marks = FaultState(), [], []
    open_: dict[tuple[str, ...], Window] = {}  # the faults in force, by key, and their windows
    for e in facts.events:
        if e.process != "nemesis":
            continue
        if e.f == "add-toxic" and e.type == "ok":  # the invoke carried the toxic; its ok changes nothing
            continue
        t = e.time - facts.start
        state.apply(e)
        now = _fault_labels(state, facts.labels, facts.words.downstream)
        for key in [k for k in open_ if k not in now]:
            w = open_.pop(key)
            w.t1, w.events = t, w.events + [e.index]
        for key, (label, side) in now.items():
            if key not in open_:
                open_[key] = Window(t, end, label, side, [e.index], guids=[key[1]] if key[0] == "held" else [])
                windows.append(open_[key])
        if e.f not in ("add-toxic", "remove-toxic", "disable-proxy", "enable-proxy"):
            marks.append(Mark("faults", t, "nemesis", describe_event(e, facts.words), (e.index,)))
    return windows, marks


def _event_dict(e: Event, start: float) -> dict:
    value = {
        k: (f"({len(v)} entries, not shown)" if k in LARGE_FIELDS and isinstance(v, (dict, list)) else v)
        for k, v in e.value.items()
    }
    return {
        "index": e.index,
        "t": round(e.time - start, 6),
        "process": e.process,
        "type": e.type,
        "f": e.f,
        "value": value,
    }


def build(history: History, verdicts: list[Verdict] | None = None) -> Model:
    """The timeline of one history; verdicts default to what the checkers find in it."""
    facts = Facts(history)
    verdicts = checkers.check(history) if verdicts is None else verdicts
    times = [e.time for e in facts.events] + [
        c[k] for c in facts.account_calls for k in ("received_at", "answered_at") if c.get(k) is not None
    ]
    end = (max(times) - facts.start) if times else 0.0
    windows, nemesis_marks = fault_windows(facts, end)
    marks, spans = relay_marks(facts)
    marks += nemesis_marks + [
        Mark("steps", e.time - facts.start, "tampered", describe_event(e, facts.words), (e.index,))
        for e in facts.events
        if e.f == "tampered"
    ]
    boxes = (
        step_boxes(facts)
        + channel_boxes(facts, end)
        + spans
        + batch_boxes(facts, end)
        + ledger_boxes(facts, Box)
        + account_boxes(facts, end)
    )
    relays = sorted({b.lane for b in spans} | {m.lane for m in marks if m.lane.startswith("relay ")})
    order = ["faults", "steps", "channel", *relays, "batch runs", "ledger", facts.words.downstream]
    rows = {"faults": pack(windows)}
    for lane in order[1:]:
        rows[lane] = pack([b for b in boxes if b.lane == lane])
    lanes = [
        (lane, rows[lane])
        for lane in order
        if lane in ("faults", "channel", facts.words.downstream)
        or any(b.lane == lane for b in boxes)
        or any(m.lane == lane for m in marks)
    ]
    named = {i for items in (boxes, marks, verdicts, windows) for item in items for i in item.events}
    events = {i: _event_dict(history[i], facts.start) for i in sorted(named)}
    calls = {c["seq"]: {**c, "t": round(c["received_at"] - facts.start, 6)} for c in facts.account_calls}
    groups = verdict_groups(verdicts, facts.labels, facts.words)
    preselected = annotate(boxes, groups, facts)
    return Model(
        {k: v for k, v in facts.scenario.items() if k != "tolerances"},
        end,
        lanes,
        boxes,
        marks,
        windows,
        groups,
        events,
        calls,
        preselected,
    )
