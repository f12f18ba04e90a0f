"""Incident reports: a verdict turned into text a person reads without the code, with its timeline.

    report(history, verdicts)   # every verdict of a run, the most serious first

Rendering only: the verdicts and the history are the checkers' and the engine's;
nothing here judges.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

from relaychaos.checkers import RULES
from relaychaos.checkers.facts import Facts
from relaychaos.checkers.verdict import Verdict
from relaychaos.contract import CLAUSES
from relaychaos.history import Event, History
from relaychaos.records.base import UNSET
from relaychaos.words import Words

COURSE = Words()


class Events(Protocol):
    """What a timeline reads of a history: its events in order, and each by index (a History, or a soak's
    excerpt of one)."""

    def __iter__(self) -> Iterator[Event]: ...

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Event: ...


def report(history: History, verdicts: list[Verdict], limit: int = 5) -> str:
    """The verdicts as incident reports, the most serious first."""
    facts = Facts(history)
    header = facts.header
    if not verdicts:
        return f"scenario {header.name}: every rule held"
    head = [
        f"scenario {header.name} against relay '{header.relay}': {len(verdicts)} violation(s) "
        f"of {len({v.rule for v in verdicts})} rule(s)"
    ]
    if header.description:
        head.append(f"  scenario: {header.description}")
    production = header.incident.guids if header.incident is not UNSET else None
    shown = [
        render(v, history, facts.account_calls, facts.start, facts.labels, production, facts.words)
        for v in verdicts[:limit]
    ]
    more = [f"... and {len(verdicts) - limit} more"] if len(verdicts) > limit else []
    return "\n\n".join(["\n".join(head)] + shown + more)


def describe_event(e: Event, words: Words = COURSE) -> str:
    """One line saying what an event was, in the relay's profile's words (incident reports and timeline pages)."""
    v = e.value
    if e.f == "transfer":
        if e.type == "invoke":
            if "raw" in v:
                return f"channel sends a raw body {v['raw'][:60]!r}"
            req = v.get("request") or {}
            race = f" (one of {v['race']} sent at once)" if v.get("race") else ""
            return (
                f"channel sends {req.get('amount')} {req.get('from')}→{req.get('to')}, attempt {v.get('attempt')}{race}"
            )
        if e.type == "ok":
            return f"channel gets {words.answer(v.get('status'), v.get('code'))}"
        return f"channel gets no answer: {v.get('error')}"
    if e.process == "nemesis":
        if e.f == "add-toxic":
            return f"fault: {v['kind']} toxic on the {v['proxy']} proxy ({v['stream']}, {v.get('attributes')})"
        extra = " ".join(f"{k}={val}" for k, val in v.items() if val not in (None, [], {}))
        return f"fault: {e.f} {extra}".rstrip()
    if e.f in ("start", "kill") and "slot" in v:
        slot = v["slot"]
        if e.type == "fail":
            return f"{words.relay} {slot} failed to {e.f}: {str(v.get('error', '')).splitlines()[0]}"
        return {
            "start": f"{words.relay} {slot} started (serve, pid {v.get('pid')})",
            "kill": f"{words.relay} {slot} killed with SIGKILL",
        }.get(e.f, f"{words.relay} {slot} {e.f}")
    if "run" in v and "command" in v:
        if e.type == "invoke":
            return f"{' '.join(v.get('argv', [])[-3:])} starts"
        return f"{words.command(e.f)} ends with status {v.get('returncode')}"
    if e.f == "step":
        return f"step {v.get('n')}: {v.get('step')}"
    if e.f == "wait-calls":
        return f"harness waits until the {words.downstream} has received {v.get('wanted')} call(s): {v.get('calls')}"
    if e.f == "wait-row":
        return f"harness waits until the ledger row is {v.get('wanted')}: {v.get('status')}"
    return f"{e.process} {e.type} {e.f}"


def _ledger_moves(guid: str, history: Events) -> list[tuple[float, str]]:
    """The GUID's ledger row changes, as seen by the snapshots after each step."""
    out, last = [], None
    for e in history:
        if e.f != "ledger-snapshot" or e.type != "ok":
            continue
        row = e.value["rows"].get(guid)
        now = (row["status"], row.get("resp_code"), row.get("attempts")) if row else None
        if now != last:
            shown = "deleted" if now is None else f"{now[0]} (code {now[1]}, attempts {now[2]})"
            out.append((e.time, f"#{e.index:<4} ledger row is now {shown}, after {e.value.get('kind')}"))
            last = now
    return out


# A line of a timeline (`render`): an event at its time, or how many were left out of the middle. Both are
# timings: under a race, which events happen and in what order is the race's.
TIMELINE_LINE = re.compile(r"^  (?:\+\s*-?\d+\.\d+s  |\.\.\. \d+ more \.\.\.$)")


def timeline(
    verdict: Verdict,
    history: Events,
    account_calls: list[dict],
    start: float,
    limit: int = 40,
    words: Words = COURSE,
) -> list[str]:
    """The verdict's events and account calls, in time order, as lines `+0.123s  what happened`."""
    entries: list[tuple[float, str]] = []
    for i in verdict.events:
        e = history[i]
        entries.append((e.time, f"#{e.index:<4} {describe_event(e, words)}"))
    by_seq = {c["seq"]: c for c in account_calls}
    for seq in verdict.calls:
        c = by_seq.get(seq)
        if c is None:
            continue
        row = c.get("ledger_status") or "no row"
        if c.get("ledger_error"):
            row = f"unreadable ({c['ledger_error']})"
        entries.append(
            (
                c["received_at"],
                f"acct#{seq:<2} {words.downstream} receives the transfer ({words.relay}'s ledger row at that moment: "
                f"{row})",
            )
        )
        if c.get("answered_at") is not None:
            what = "applied: debited" if c.get("applied") else "nothing applied"
            said = words.downstream_answer(c.get("code"))
            entries.append((c["answered_at"], f"acct#{seq:<2} {words.downstream} answers {said} ({what})"))
    if verdict.guid is not None:
        entries += _ledger_moves(verdict.guid, history)
    entries.sort(key=lambda x: x[0])
    lines = [f"  +{t - start:7.3f}s  {text}" for t, text in entries]
    if len(lines) > limit:
        lines = lines[: limit // 2] + [f"  ... {len(lines) - limit} more ..."] + lines[-limit // 2 :]
    return lines


def render(
    verdict: Verdict,
    history: Events,
    account_calls: list[dict],
    start: float,
    labels: dict[str, str] | None = None,
    production: dict[str, str] | None = None,
    words: Words = COURSE,
) -> str:
    """An incident report: rule, GUID (or key), what went wrong, and the timeline."""
    who = "the run" if verdict.guid is None else f"{words.key} {verdict.guid}"
    label = (labels or {}).get(verdict.guid or "")
    in_production = (production or {}).get(label or "")  # an imported incident's GUID behind the label
    named = f"scenario label {label}" + (f", production GUID {in_production}" if in_production else "")
    head = f"[{verdict.rule}] {who}" + (f" ({named})" if label else "")
    rule = RULES.get(verdict.rule)
    cited = CLAUSES.get(verdict.clause or (rule.contract[0] if rule else ""))
    lines = [head, f"  rule: {rule.text if rule else ''}"]
    if verdict.details.get("source"):  # a keyed service's verdict cites its profile's table, not the course's
        lines.append(f"  source: {verdict.details['source']}")
    elif cited:
        lines.append(f"  contract {cited.cite()}")
    lines.append(f"  what happened: {verdict.summary}")
    tl = timeline(verdict, history, account_calls, start, words=words)
    if tl:
        lines.append("  timeline (seconds since the scenario started):")
        lines += tl
    return "\n".join(lines)
