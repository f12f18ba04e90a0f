"""Verdicts: what a checker found, for whom, and the timeline that led there.

A verdict names the rule, the GUID (when the rule is about one), a one-line
summary, and the history events (and account calls) that show it. `render`
turns it into a short incident report that reads without the code.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .history import Event, History


@dataclass(frozen=True)
class Verdict:
    """A broken rule. `events` are history indices; `calls` are account-call sequence numbers;
    `clause` the contract clause broken (harness.contract; None: the rule's first)."""

    rule: str
    guid: str | None
    summary: str
    events: tuple[int, ...] = ()
    calls: tuple[int, ...] = ()
    details: dict = field(default_factory=dict)
    clause: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _describe_event(e: Event) -> str:
    v = e.value
    if e.f == "transfer":
        if e.type == "invoke":
            if "raw" in v:
                return f"channel sends a raw body {v['raw'][:60]!r}"
            req = v.get("request") or {}
            race = f" (one of {v['race']} sent at once)" if v.get("race") else ""
            return (f"channel sends {req.get('amount')} {req.get('from')}→{req.get('to')}, attempt {v.get('attempt')}"
                    f"{race}")
        if e.type == "ok":
            return f"channel gets HTTP {v.get('status')} code {v.get('code')}"
        return f"channel gets no answer: {v.get('error')}"
    if e.process == "nemesis":
        if e.f == "add-toxic":
            return f"fault: {v['kind']} toxic on the {v['proxy']} proxy ({v['stream']}, {v.get('attributes')})"
        extra = " ".join(f"{k}={val}" for k, val in v.items() if val not in (None, [], {}))
        return f"fault: {e.f} {extra}".rstrip()
    if e.process.startswith("relay-"):
        slot = e.process[6:]
        if e.type == "fail":
            return f"relay {slot} failed to {e.f}: {str(v.get('error', '')).splitlines()[0]}"
        return {"start": f"relay {slot} started (serve, pid {v.get('pid')})",
                "kill": f"relay {slot} killed with SIGKILL"}.get(e.f, f"relay {slot} {e.f}")
    if e.process.startswith("batch-"):
        if e.type == "invoke":
            return f"{' '.join(v.get('argv', [])[-3:])} starts"
        return f"{e.f} ends with status {v.get('returncode')}"
    if e.f == "step":
        return f"step {v.get('n')}: {v.get('step')}"
    if e.f == "wait-calls":
        return f"harness waits until the account system has received {v.get('wanted')} call(s): {v.get('calls')}"
    if e.f == "wait-row":
        return f"harness waits until the ledger row is {v.get('wanted')}: {v.get('status')}"
    return f"{e.process} {e.type} {e.f}"


def _ledger_moves(guid: str, history: History) -> list[tuple[float, str]]:
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


def timeline(verdict: Verdict, history: History, account_calls: list[dict], start: float,
             limit: int = 40) -> list[str]:
    """The verdict's events and account calls, in time order, as lines `+0.123s  what happened`."""
    entries: list[tuple[float, str]] = []
    for i in verdict.events:
        e = history[i]
        entries.append((e.time, f"#{e.index:<4} {_describe_event(e)}"))
    by_seq = {c["seq"]: c for c in account_calls}
    for seq in verdict.calls:
        c = by_seq.get(seq)
        if c is None:
            continue
        row = c.get("ledger_status") or "no row"
        if c.get("ledger_error"):
            row = f"unreadable ({c['ledger_error']})"
        entries.append((c["received_at"], f"acct#{seq:<2} account system receives the transfer "
                                          f"(relay's ledger row at that moment: {row})"))
        if c.get("answered_at") is not None:
            what = "applied: debited" if c.get("applied") else "nothing applied"
            entries.append((c["answered_at"], f"acct#{seq:<2} account system answers {c.get('code')} ({what})"))
    if verdict.guid is not None:
        entries += _ledger_moves(verdict.guid, history)
    entries.sort(key=lambda x: x[0])
    lines = [f"  +{t - start:7.3f}s  {text}" for t, text in entries]
    if len(lines) > limit:
        lines = lines[: limit // 2] + [f"  ... {len(lines) - limit} more ..."] + lines[-limit // 2:]
    return lines


def render(verdict: Verdict, history: History, account_calls: list[dict], start: float,
           labels: dict[str, str] | None = None) -> str:
    """An incident report: rule, GUID, what went wrong, and the timeline."""
    from .checkers import RULES  # noqa: PLC0415 - the rule book lives with the checkers

    who = "the run" if verdict.guid is None else f"GUID {verdict.guid}"
    label = (labels or {}).get(verdict.guid or "")
    head = f"[{verdict.rule}] {who}" + (f" (scenario label {label})" if label else "")
    from .contract import CLAUSES  # noqa: PLC0415

    rule = RULES.get(verdict.rule)
    cited = CLAUSES.get(verdict.clause or (rule.contract[0] if rule else ""))
    lines = [head, f"  rule: {rule.text if rule else ''}"]
    if cited:
        lines.append(f"  contract {cited.cite()}")
    lines.append(f"  what happened: {verdict.summary}")
    tl = timeline(verdict, history, account_calls, start)
    if tl:
        lines.append("  timeline (seconds since the scenario started):")
        lines += tl
    return "\n".join(lines)
