"""What a soak found, written down: the summary JSON, the first violation's timeline, the closing lines.

    summary = summarize(result, verdicts, times, rate=500, ...)

The time to first violation is when the evidence of the earliest violation was
complete: the last account call the verdict names (the second debit of a double
debit, say), or else the last history event of its GUID; counted from the
start of the traffic.
"""

from __future__ import annotations

import dataclasses
import resource
from collections.abc import Iterable, Iterator
from pathlib import Path

from relaychaos.checkers.verdict import Verdict
from relaychaos.history import Event, header, iter_events
from relaychaos.reports.incident import render
from relaychaos.soak.session import SoakResult
from relaychaos.words import Words

SUSTAINED_SHARE = 0.95  # achieved at least this share of the rate asked: the rate was sustained
FOCUS_BEFORE_S, FOCUS_AFTER_S = 2.0, 1.0


def evidence_times(events: Iterable[Event], verdicts: list[Verdict]) -> dict[int, float]:
    """For each verdict (by position), the monotonic time its evidence was complete (see the module doc); one pass."""
    guids = {v.guid for v in verdicts if v.guid}
    last_event: dict[str | None, float] = {}
    call_times: dict[int, float] = {}
    for e in events:
        if e.guid in guids and e.f != "guid":
            last_event[e.guid] = e.time
        elif e.f == "account-stats":
            call_times = {c["seq"]: c["received_at"] for c in e.value["stats"].get("calls", [])}
    out = {}
    for i, v in enumerate(verdicts):
        calls = [call_times[s] for s in v.calls if s in call_times]
        t = max(calls) if calls else last_event.get(v.guid)
        if t is not None:
            out[i] = t
    return out


class Excerpt:
    """The events of a long history that some verdicts' timelines show, by index (a History for the reports)."""

    def __init__(self, events: list[Event]):
        self._events = events
        self._by_index = {e.index: e for e in events}

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index: int) -> Event:
        return self._by_index[index]


def excerpt(path: Path, verdicts: list[Verdict]) -> Excerpt:
    """In one pass over a saved history: the header, the events the verdicts name or that name their GUIDs,
    and the ledger snapshots and account calls cut down to those GUIDs."""
    guids = {v.guid for v in verdicts if v.guid}
    wanted = {i for v in verdicts for i in v.events}
    seqs = {s for v in verdicts for s in v.calls}
    kept = []
    for e in iter_events(path):
        if e.f == "ledger-snapshot" and e.type == "ok":
            e = dataclasses.replace(
                e, value={**e.value, "rows": {g: r for g, r in e.value["rows"].items() if g in guids}}
            )
        elif e.f == "account-stats":
            stats = e.value["stats"]
            stats = {
                **stats,
                "calls": [c for c in stats.get("calls", []) if c["seq"] in seqs or c["guid"] in guids],
                "guids": {g: x for g, x in stats.get("guids", {}).items() if g in guids},
            }
            e = dataclasses.replace(e, value={**e.value, "stats": stats})
        elif not (e.index == 0 or e.f == "scenario" or e.index in wanted or e.guid in guids):
            continue
        kept.append(e)
    return Excerpt(kept)


def harness_cpu_s() -> float:
    """CPU seconds (user and system) the harness process has used so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return round(usage.ru_utime + usage.ru_stime, 1)


def incidents(shown: Excerpt, verdicts: list[Verdict], limit: int) -> str:
    """The first `limit` verdicts as incident reports, each timeline cut to its GUID's own stretch of the soak
    (its events, and the faults and process events from FOCUS_BEFORE_S before its first to FOCUS_AFTER_S after
    its last): a soak's hundreds of faults would otherwise crowd out what happened to the GUID."""
    head = header(shown)
    calls: list[dict] = next((e.value["stats"].get("calls", []) for e in shown if e.f == "account-stats"), [])
    start = next(iter(shown)).time
    parts = [
        f"soak {head.name} against relay '{head.relay}': {len(verdicts)} "
        f"violation(s) of {len({v.rule for v in verdicts})} rule(s)\n  {head.description}"
    ]
    words = Words.of(head.profile, head.commands)
    parts += [render(_focused(v, shown, calls), shown, calls, start, words=words) for v in verdicts[:limit]]
    if len(verdicts) > limit:
        parts.append(f"... and {len(verdicts) - limit} more (verdicts.json holds them all)")
    return "\n\n".join(parts) + "\n"


def _focused(v: Verdict, shown: Excerpt, calls: list[dict]) -> Verdict:
    own = [shown[i].time for i in v.events if shown[i].guid == v.guid and v.guid]
    own += [c["received_at"] for c in calls if c["seq"] in set(v.calls)]
    if not own:
        return v
    t0, t1 = min(own) - FOCUS_BEFORE_S, max(own) + FOCUS_AFTER_S
    return dataclasses.replace(
        v, events=tuple(i for i in v.events if shown[i].guid == v.guid or t0 <= shown[i].time <= t1)
    )


def peak_rss_mib() -> float:
    """The harness process's peak resident memory so far, in MiB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def summarize(
    result: SoakResult,
    verdicts: list[Verdict],
    times: dict[int, float],
    *,
    relay: str,
    rate: float,
    duration_s: float,
    seed: int,
    check_s: float,
    history_events: int,
    history_path: str,
) -> dict:
    """The summary JSON of a soak (see docs/soak.md)."""
    c = result.counts
    achieved = c.achieved_rate()
    first = min(times, key=times.__getitem__) if times else None
    return {
        "relay": relay,
        "seed": seed,
        "duration_s_asked": duration_s,
        "duration_s": round((c.stopped_at or result.ended_at) - (c.started_at or result.started_at), 2),
        "rate_asked": rate,
        "rate_achieved": round(achieved, 1),
        "rate_sustained": achieved >= SUSTAINED_SHARE * rate,
        "transfers_sent": c.sent,
        "missed": c.missed,
        "held": c.held,
        "held_s": round(c.held_s, 2),
        "bursts": c.bursts,
        "answers": dict(sorted(c.codes.items())),
        "faults_done": len(result.faults_done),
        "faults": _tally(result.faults_done),
        "batches": _tally(result.batches_done),
        "stopped_because": result.stopped_because,
        "history": history_path,
        "history_events": history_events,
        "check_s": round(check_s, 2),
        "violations": len(verdicts),
        "rules_broken": _tally([v.rule for v in verdicts]),
        "first_violation": None
        if first is None
        else {
            "rule": verdicts[first].rule,
            "guid": verdicts[first].guid,
            "summary": verdicts[first].summary,
            "after_s": round(times[first] - result.started_at, 2),
        },
        "peak_rss_mib": peak_rss_mib(),
        "harness_cpu_s": harness_cpu_s(),
    }


def _tally(names: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in names:
        out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items()))


def closing_lines(summary: dict, out: str) -> list[str]:
    """What the soak prints when it is over."""
    s = summary
    lines = [
        f"soak against relay '{s['relay']}': {s['transfers_sent']} transfers in {s['duration_s']:g} s, "
        f"{s['rate_achieved']:g}/s of {s['rate_asked']:g}/s asked; {s['faults_done']} faults, "
        f"{sum(s['batches'].values())} batch runs; {s['history_events']} events checked in {s['check_s']:g} s; "
        f"peak memory {s['peak_rss_mib']:g} MiB"
    ]
    if not s["rate_sustained"]:
        lines.append(
            f"this machine could not sustain {s['rate_asked']:g} transfers/s: it achieved "
            f"{s['rate_achieved']:g}/s ({s['missed']} calls not sent because they were over a second late); "
            "ask for a lower --rate"
        )
        if "write-before-send" in s["rules_broken"]:
            lines.append(
                "caution: on a saturated machine a call can wait in queues longer than ACCOUNT_TIMEOUT_MS "
                "on its way to the account system, and then reach it after a correct relay marked it "
                "UNKNOWN: write-before-send verdicts of an overloaded soak may be the machine's, not the "
                "relay's (raise --account-timeout-ms, or lower --rate)"
            )
    if s["stopped_because"]:
        lines.append(f"the soak stopped early: {s['stopped_because']}")
    if s["violations"]:
        fv = s["first_violation"]
        first = f"; the first after {fv['after_s']:g} s: {fv['rule']} on {fv['guid']}: {fv['summary']}" if fv else ""
        lines.append(f"{s['violations']} violation(s) of {', '.join(s['rules_broken'])}{first}")
        lines.append(f"its timeline: {out}/incident.txt")
    else:
        lines.append("every rule held")
    lines.append(f"history, summary.json and logs in {out}")
    return lines
