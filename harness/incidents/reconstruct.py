"""From a bundle's logs to the steps that reproduce the night: order, clocks, and the faults that explain it.

    plan = reconstruct(bundle, account_timeout_ms=300)

The channel log gives the sends (and what the relay answered), the account log what
arrived and was applied, the operations log restarts and batch runs. Inferences:
  - an answer the channel never got (E901, E902 or its own time-out) for a call the
    account system applied: the answer was dropped on the way back (a timeout toxic);
  - no call at all: E902 means the account system could not be reached (the proxy
    disabled), E901 that the request was lost on the way (an upstream timeout toxic);
  - resends of one GUID within BURST_S of each other: they reached the relay together
    (a race);
  - an account call whose latest cause is a reprocess batch run: that run sent it;
  - a restart or deploy: a kill and a start;
  - calls the account system took SLOW_MS or more to answer (`answered_at`): its processing
    delayed by as much around those sends, so that every copy of a burst is in flight at once.
The account system's clock is checked against the channel's: a call stamped before the
send that caused it means the clocks disagree; the offset is estimated (the smallest
shift that puts every first call after its send, plus 1 ms) and applied, and the plan says so.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from relaychaos.engine import steps as S
from relaychaos.incidents.bundle import Bundle, BundleError, Record
from relaychaos.tolerances import CURRENT as TOLERANCES

BURST_S = 0.05  # resends of one GUID closer than this went out together
SLOW_MS = 50  # an account system taking this long to answer keeps a call in flight while resends arrive
DEFINITE = ("0000", "E500", "E904", "E400")


@dataclass(frozen=True)
class Planned:
    """One step of the scenario and the log lines it came from."""

    step: object
    comment: str


@dataclass
class Plan:
    steps: list[Planned]
    labels: dict[str, str]  # production GUID -> scenario label
    rules: list[str]  # what the incident broke, by the logs
    relays: tuple[str, ...]
    accounts: dict[str, int]
    clock_offset_s: float = 0.0
    notes: list[str] = field(default_factory=list)  # said at the top of the scenario file


def clock_offset(bundle: Bundle, given: float | None) -> tuple[float, str | None]:
    """(seconds to add to every account time, the sentence saying why); BundleError if a given offset leaves
    an account call before its send."""
    first_send = {}
    for r in bundle.channel:
        first_send.setdefault(r["guid"], r)
    firsts = {}
    for r in sorted(bundle.account, key=lambda r: r.at):
        firsts.setdefault(r["guid"], r)
    gaps = sorted(((a.at - first_send[g].at, a, first_send[g]) for g, a in firsts.items()), key=lambda x: x[0])
    if given is not None:
        if gaps and gaps[0][0] + given < 0:
            d, a, c = gaps[0]
            raise BundleError(f"with --account-clock-offset {given:g}, GUID {a['guid']} still reaches the account "
                              f"system {-(d + given):.3f} s before the channel sent it ({c.where})",
                              where=f"{bundle.folder / a.file}, line {a.line}",
                              fix=f"use an offset of at least {-d:.3f}, or leave the option out to have it estimated")
        return given, (f"account times moved by {given:+.3f} s (--account-clock-offset)" if given else None)
    if not gaps or gaps[0][0] >= 0:
        return 0.0, None
    d, a, c = gaps[0]
    offset = round(-d + 0.001, 3)
    return offset, (f"the clocks disagree: the account system stamped GUID {a['guid']} ({a.where}) {-d:.3f} s "
                    f"before the channel sent it ({c.where}); its clock is taken to be {offset:.3f} s behind the "
                    f"channel's, and every account time is moved by +{offset:.3f} s")


def _cause(call: Record, at: float, sends: list[Record], batches: list[Record]):
    """The latest channel send of the call's GUID, or reprocess run, before it."""
    before = [s for s in sends if s["guid"] == call["guid"] and s.at <= at]
    before += [b for b in batches if b.at <= at]
    return max(before, key=lambda r: r.at) if before else None


def _lines(records: list[Record]) -> str:
    by_file: dict[str, list[int]] = {}
    for r in records:
        by_file.setdefault(r.file, []).append(r.line)
    parts = []
    for file, lines in by_file.items():
        lines = sorted(lines)
        span = str(lines[0]) if len(lines) == 1 else (f"{lines[0]}-{lines[-1]}" if lines == list(
            range(lines[0], lines[-1] + 1)) else ", ".join(map(str, lines)))
        parts.append(f"{file} line{'s' if len(lines) > 1 else ''} {span}")
    return "; ".join(parts)


def _bursts(sends: list[Record]) -> list[list[Record]]:
    """Sends in time order, resends of one GUID to one relay within BURST_S of the first grouped."""
    groups: list[list[Record]] = []
    for s in sorted(sends, key=lambda r: (r.at, r.line)):
        g = groups[-1] if groups else None
        if g and g[0]["guid"] == s["guid"] and g[0]["relay"] == s["relay"] and s.at - g[0].at <= BURST_S:
            g.append(s)
        else:
            groups.append([s])
    return groups


def _fault(send: Record, calls: list[Record]) -> tuple[str, object, object] | None:
    """(window key, the step opening it, the step closing it) that explains this send's answer; None if none."""
    result, applied = send["result"], [c for c in calls if c["code"] == "0000"]
    hub = f"hub-{send['relay']}"
    if result in ("E901", "E902") and calls:
        return ("answer-lost", S.AddToxic("account", "timeout", name="answer-lost", attributes={"timeout": 0}),
                S.RemoveToxic("account", "answer-lost"))
    if result == "E901":
        return ("request-lost", S.AddToxic("account", "timeout", stream="upstream", name="request-lost",
                                           attributes={"timeout": 0}), S.RemoveToxic("account", "request-lost"))
    if result == "E902":
        return ("account-down", S.DisableProxy("account"), S.EnableProxy("account"))
    if result == "timeout" and applied:
        return (f"channel-answer-lost-{hub}", S.AddToxic(hub, "timeout", name="channel-answer-lost",
                                                        attributes={"timeout": 0}), S.RemoveToxic(hub, "channel-answer-lost"))
    if result == "timeout":
        return (f"channel-request-lost-{hub}", S.AddToxic(hub, "timeout", stream="upstream", name="channel-request-lost",
                                                         attributes={"timeout": 0}),
                S.RemoveToxic(hub, "channel-request-lost"))
    return None


WHY = {"answer-lost": "the account system applied it but the relay never got the answer: the answer was dropped "
                      "between them",
       "request-lost": "the relay timed out and the account system never saw it: the request was lost on the way",
       "account-down": "refused, and the account system never saw it: the account system could not be reached",
       "channel-answer-lost": "the channel timed out on a call the account system applied: the relay's answer was "
                              "dropped on its way to the channel",
       "channel-request-lost": "the channel timed out and the account system never saw it: the request never "
                               "reached the relay"}


def _describe(send: Record, label: str) -> str:
    return f"{send['guid']} ({label}) {send['amount']} {send['from']}→{send['to']} on relay {send['relay']}: " \
           f"{send['result']}"


def reconstruct(bundle: Bundle, account_timeout_ms: int, offset_s: float | None = None) -> Plan:
    """The plan of steps that replays the bundle's night (see the module doc)."""
    offset, clock_note = clock_offset(bundle, offset_s)
    sends = sorted(bundle.channel, key=lambda r: (r.at, r.line))
    labels: dict[str, str] = {}
    for s in sends:
        labels.setdefault(s["guid"], f"g{len(labels) + 1}")
    caused = _attribute(bundle, offset, sends)
    items = [(g[0].at, g) for g in _bursts(sends)] + [(o.at, o) for o in bundle.operations]
    steps = _Steps(account_timeout_ms)
    for _, item in sorted(items, key=lambda i: i[0]):
        if isinstance(item, Record):
            steps.operation(item, caused.get(id(item), []), labels)
        else:
            steps.sends(item, [c for s in item for c in caused.get(id(s), [])], labels[item[0]["guid"]])
    steps.close()
    steps.pace(None, [])
    return Plan(steps.out, labels, _rules(bundle), _initial_relays(bundle), _accounts(bundle), offset,
                [n for n in [clock_note] if n])


def _attribute(bundle: Bundle, offset: float, sends: list[Record]) -> dict[int, list[Record]]:
    """id(cause) -> the account calls it caused: each call's latest send of its GUID or reprocess run before it."""
    batches = [o for o in bundle.operations if o["event"] == "batch" and o["command"] == "reprocess"]
    caused: dict[int, list[Record]] = {}
    for call in sorted(bundle.account, key=lambda r: r.at):
        cause = _cause(call, call.at + offset, sends, batches)
        if cause is None:
            raise BundleError(f"GUID {call['guid']} reaches the account system before anything sent it",
                              where=f"{bundle.folder / call.file}, line {call.line}",
                              fix="check the times of this line and of the channel's sends of it")
        caused.setdefault(id(cause), []).append(call)
    return caused


class _Steps:
    """The steps being planned, with the fault window and the account system's pace in force."""

    def __init__(self, account_timeout_ms: int):
        self.account_timeout_ms = account_timeout_ms
        self.out: list[Planned] = []
        self.window: tuple | None = None  # (key, closing step)
        self.slow: int | None = None  # the account system's processing delay in force, in ms

    def close(self) -> None:
        if self.window:
            self.out.append(Planned(self.window[1], "the fault ends here"))
            self.window = None

    def pace(self, ms: int | None, calls: list[Record]) -> None:
        if ms != self.slow and self.slow:
            self.out.append(Planned(S.ServerFault(delay_ms=0), "the account system answers at its usual speed again"))
        if ms and ms != self.slow:
            self.out.append(Planned(S.ServerFault(delay_ms=ms), f"{_lines(calls)}: the account system took about {ms} "
                                                                "ms to answer (answered_at - at): its processing is "
                                                                "delayed as much"))
        self.slow = ms

    def operation(self, op: Record, calls: list[Record], labels: dict) -> None:
        self.close()
        self.pace(None, [])
        self.out += _operation(op, calls, labels, self.account_timeout_ms)

    def sends(self, group: list[Record], calls: list[Record], label: str) -> None:
        self.pace(_slow_ms(calls), calls)
        if len(group) > 1:
            self.close()
            self.out.append(_race(group, calls, label))
            return
        send = group[0]
        fault = _fault(send, calls)
        if (fault[0] if fault else None) != (self.window[0] if self.window else None):
            self.close()
            if fault:
                self.out.append(Planned(fault[1], f"{WHY[fault[0].split('-hub-')[0]]} ({_lines([send] + calls)})"))
                self.window = (fault[0], fault[2])
        gave_up = send["result"] == "timeout"
        step = S.Send(label, amount=send["amount"], src=send["from"], dst=send["to"], slot=send["relay"],
                      timeout_s=round(self.account_timeout_ms / 1000 + 0.2, 3) if gave_up else None)
        seen = "; account system: " + ", ".join(f"{c.where} answered {c['code']}" for c in calls) if calls else \
            "; the account system has no call for it"
        self.out.append(Planned(step, f"{send.where}: {_describe(send, label)}{seen}"))


def _slow_ms(calls: list[Record]) -> int | None:
    """The account system's median time to answer these calls, to 10 ms, if SLOW_MS or more; else None."""
    took = sorted((c["answered_at"] - c.at) * 1000 for c in calls if c["answered_at"] is not None)
    ms = took[len(took) // 2] if took else 0
    return int(round(ms, -1)) if ms >= SLOW_MS else None


def _race(group: list[Record], calls: list[Record], label: str) -> Planned:
    """Resends of one GUID closer than BURST_S: one race of as many copies."""
    first, answers = group[0], Counter(s["result"] for s in group)
    return Planned(S.Race(label, n=len(group), amount=first["amount"], src=first["from"], dst=first["to"],
                          slots=(first["relay"],)),
                   f"{_lines(group + calls)}: {len(group)} sends of {first['guid']} within "
                   f"{(group[-1].at - first.at) * 1000:.0f} ms (answers: "
                   f"{', '.join(f'{c} ×{n}' for c, n in answers.items())}), {len(calls)} account call(s) → they "
                   "reached the relay together: a race")


def _operation(op: Record, calls: list[Record], labels: dict, account_timeout_ms: int) -> list[Planned]:
    slot, where = op["relay"], op.where
    if op["event"] in ("restart", "deploy"):
        return [Planned(S.Kill(slot), f"{where}: {op['event']} of relay {slot} → it was killed ..."),
                Planned(S.Start(slot), "... and started again on the same ledger")]
    if op["event"] == "kill":
        return [Planned(S.Kill(slot), f"{where}: relay {slot} killed")]
    if op["event"] == "start":
        return [Planned(S.Start(slot), f"{where}: relay {slot} started")]
    command, arg = op["command"], op["argument"]
    safe = round(account_timeout_ms / 1000 + TOLERANCES.min_age_margin_s, 3)
    if command == "reprocess":
        sent = f"; {_lines(calls)}: {', '.join(labels[c['guid']] for c in calls)} sent by this run" if calls else \
            "; it sent nothing"
        return [Planned(S.Reprocess(max_attempts=max(1, int(arg))), f"{where}: reprocess --max-attempts {arg:g}{sent}")]
    if command == "resolve":
        return [Planned(S.Wait(round(safe + 0.1, 3)), f"{where}: resolve --min-age {arg:g} in production; here the "
                                                       "rows it could settle are made as old as the replay's min-age"),
                Planned(S.Resolve(min_age_s=safe), f"{where}: resolve, with --min-age {safe:g} (just past "
                                                   "ACCOUNT_TIMEOUT_MS, as the production value was past its own)")]
    return [Planned(S.Purge(retention_s=min(float(arg), 60.0)), f"{where}: purge --retention {arg:g}")]


def _rules(bundle: Bundle) -> list[str]:
    """The rules the account log shows broken: a GUID called twice, debited twice."""
    calls = Counter(r["guid"] for r in bundle.account)
    applied = Counter(r["guid"] for r in bundle.account if r["code"] == "0000")
    rules = ["one-account-call"] if any(n > 1 for n in calls.values()) else []
    return rules + (["one-debit", "balances"] if any(n > 1 for n in applied.values()) else [])


def _initial_relays(bundle: Bundle) -> tuple[str, ...]:
    """Relay instances running from the start: every one the channel used, unless the operations log starts it."""
    started_later = {o["relay"] for o in bundle.operations if o["event"] == "start"}
    first_start = {o["relay"]: o.at for o in sorted(bundle.operations, key=lambda o: -o.at) if o["event"] == "start"}
    used = sorted({s["relay"] for s in bundle.channel} | {"a"})
    return tuple(r for r in used if r not in started_later or any(
        s["relay"] == r and s.at < first_start[r] for s in bundle.channel))


def _accounts(bundle: Bundle) -> dict[str, int]:
    given = bundle.meta.get("accounts")
    if given:
        return {str(k): int(v) for k, v in given.items()}
    parties = sorted({s["from"] for s in bundle.channel} | {s["to"] for s in bundle.channel})
    return {p: 10_000 for p in parties}
