"""From a bundle's logs to the steps that reproduce the night: order, clocks, in-flight calls, and faults.

    plan = reconstruct(bundle, account_timeout_ms=300)

The channel log gives the sends (and what the relay answered), the account log what
arrived, when it was answered and what was applied, the operations log kills, starts and
batch runs. Everything is merged in time order once; each account call is put down to its
latest cause (its GUID's latest send, or a reprocess run) in the same pass. Rules:
  - a call that was in flight (received, not yet answered) at a kill or a batch run is held
    at the account system (`server_fault: hold_guids`) from its send, sent in the
    background, waited for (`wait_calls`), and released where the account log answered it:
    a kill lands where the logs put it relative to calls in flight, and a batch run that
    ran early finds the call still being processed;
  - batch commands run at their logged moments with their logged arguments (a --min-age
    or --retention over the scenario limit of 60 s is capped, and a --min-age is never
    below the safe one of contract section 6); nothing waits in front of them;
  - answers the channel never got, refusals, races and slow bursts: faults.py;
  - sends to a relay instance that was down at that moment reached nothing: not replayed,
    and said.
Opening balances come from balances.py, the account clock's offset from clocks.py.
"""
from __future__ import annotations

import bisect
import heapq
from collections import Counter
from dataclasses import dataclass, field

from relaychaos.engine import steps as S
from relaychaos.engine.scenario_file import LIMIT_S
from relaychaos.incidents import balances, clocks
from relaychaos.incidents.faults import FaultPlanner, Planned, lines, race
from relaychaos.incidents.mapping import BundleError
from relaychaos.incidents.records import AccountLine, ChannelLine, OpLine
from relaychaos.tolerances import CURRENT as TOLERANCES

BURST_S = 0.05  # resends of one GUID closer than this went out together
LATE_S = 60.0  # a call this long after its send, with no batch run in between, was not sent by it
KILLS = ("kill", "restart", "deploy")


@dataclass
class Plan:
    steps: list[Planned]
    labels: dict[str, str]  # production GUID -> scenario label
    rules: list[str]  # what the incident broke, by the logs
    broke: dict[str, list[str]]  # rule -> the labels of the production GUIDs that broke it
    relays: tuple[str, ...]
    accounts: dict[str, int]
    answers: dict[str, list[str]]  # label -> what the channel got for each replayed send, in order
    clock_offset_s: float = 0.0
    notes: list[str] = field(default_factory=list)  # said at the top of the scenario file


def _merged(bundle):
    """Sends, operations and account calls in one time order (at equal times: operations, sends, calls)."""
    return heapq.merge(((o.at, 0, i, o) for i, o in enumerate(bundle.operations)),
                       ((s.at, 1, i, s) for i, s in enumerate(bundle.channel)),
                       ((c.at, 2, i, c) for i, c in enumerate(bundle.account)))


def attribute(bundle, account_timeout_ms: int) -> dict[int, list[AccountLine]]:
    """id(cause) -> the account calls it caused: each call's latest send of its GUID, or reprocess run, before it."""
    last_send: dict[str, ChannelLine] = {}
    last_reprocess: OpLine | None = None
    caused: dict[int, list[AccountLine]] = {}
    for _, _, _, r in _merged(bundle):
        if isinstance(r, ChannelLine):
            last_send[r.guid] = r
        elif isinstance(r, OpLine):
            if r.command == "reprocess":
                last_reprocess = r
        else:
            send = last_send.get(r.guid)
            cause = max((x for x in (send, last_reprocess) if x is not None), key=lambda x: x.at, default=None)
            where = f"{bundle.folder / r.file}, line {r.line}"
            if cause is None:
                raise BundleError(f"GUID {r.guid} reaches the account system before anything sent it", where=where,
                                  fix="check the times of this line and of the channel's sends of it (a zone? a "
                                      "unit?)")
            if cause is send and r.at - send.at > LATE_S + account_timeout_ms / 1000:
                raise BundleError(f"GUID {r.guid} reaches the account system {r.at - send.at:.1f} s after its latest "
                                  f"send ({send.where}), and no reprocess run came in between: one call far from the "
                                  "rest", where=where, fix="correct this line's time (a wrong date, zone or unit?); if "
                                  "a batch run sent it, add that run to the operations log")
            caused.setdefault(id(cause), []).append(r)
    return caused


def _bursts(sends: list[ChannelLine]) -> list[list[ChannelLine]]:
    """Sends in time order, resends of one GUID to one relay within BURST_S of the first grouped (linear: the
    open burst of each GUID and relay is looked up, not searched)."""
    groups: list[list[ChannelLine]] = []
    open_: dict[tuple, list[ChannelLine]] = {}
    for s in sends:
        g = open_.get((s.guid, s.relay))
        if g is not None and s.at - g[0].at <= BURST_S and g is groups[-1]:
            g.append(s)
            continue
        g = [s]
        groups.append(g)
        open_[(s.guid, s.relay)] = g
    return groups


def _moments(bundle) -> list[float]:
    """The times of kills and batch runs, sorted: a call in flight at one of them is held across it."""
    return sorted(o.at for o in bundle.operations if o.event in KILLS or o.event == "batch")


def _in_flight(calls: list[AccountLine], moments: list[float]) -> list[AccountLine]:
    """The calls that were received before a kill or batch run and answered after it (a call without
    `answered_at` is taken as answered at once)."""
    out = []
    for c in calls:
        i = bisect.bisect_left(moments, c.at)
        if i < len(moments) and c.answered_at is not None and c.answered_at > moments[i]:
            out.append(c)
    return out


def reconstruct(bundle, account_timeout_ms: int, offset_s: float | None = None) -> Plan:
    """The plan of steps that replays the bundle's night (see the module doc)."""
    offset, clock_note = clocks.clock_offset(bundle, offset_s)
    clocks.shift(bundle, offset)
    labels: dict[str, str] = {}
    for s in bundle.channel:
        if s.guid not in labels:
            labels[s.guid] = f"g{len(labels) + 1}"
    caused = attribute(bundle, account_timeout_ms)
    accounts, balance_notes = balances.opening(bundle)
    night = _Night(bundle, labels, caused, account_timeout_ms)
    night.play()
    rules, broke = _rules(bundle, labels)
    return Plan(night.faults.out, labels, rules, broke, night.initial, accounts, night.answers, offset,
                [n for n in [clock_note] if n] + balance_notes + night.notes)


class _Night:
    """The walk through the night in time order, planning steps (see the module doc)."""

    def __init__(self, bundle, labels: dict[str, str], caused: dict, account_timeout_ms: int):
        self.bundle, self.labels, self.caused = bundle, labels, caused
        self.timeout_ms = account_timeout_ms
        self.faults = FaultPlanner(account_timeout_ms)
        self.moments = _moments(bundle)
        self.initial = _initial_relays(bundle)
        self.running = set(self.initial)
        self.held: dict[str, int] = {}  # label -> calls of it held and not yet released
        self.answers: dict[str, list[str]] = {}
        self.notes: list[str] = []
        self.unreached: list[ChannelLine] = []
        self.ordinal: dict[int, int] = {}  # id(call) -> its number among its GUID's calls (1 for the first)
        seen: Counter = Counter()
        for c in bundle.account:
            seen[c.guid] += 1
            self.ordinal[id(c)] = seen[c.guid]

    def play(self) -> None:
        items = [(o.at, 0, n, o) for n, o in enumerate(self.bundle.operations)]
        items += [(g[0].at, 1, n, g) for n, g in enumerate(_bursts(self.bundle.channel))]
        releases: list[tuple] = []
        for at, _, _, item in sorted(items, key=lambda i: i[:3]):
            while releases and releases[0][0] <= at:
                self._release(heapq.heappop(releases)[2])
            if isinstance(item, OpLine):
                self._operation(item)
            else:
                for call in self._sends(item):
                    heapq.heappush(releases, (call.answered_at, id(call), call))
        while releases:
            self._release(heapq.heappop(releases)[2])
        self.faults.close()
        self.faults.pace(None, [])
        if self.unreached:
            first = self.unreached[0]
            self.notes.append(f"{len(self.unreached)} send(s) reached a relay instance while it was down (first: "
                              f"{first.where}, relay {first.relay}): nothing received them, so they are not replayed")

    def _release(self, call: AccountLine) -> None:
        label = self.labels[call.guid]
        if self.held.get(label):
            self.held[label] = 0
            self.faults.out.append(Planned(S.Release((label,)), f"{call.where}: the account system answered "
                                                                 f"{call.code} here: {label} is released"))

    def _sends(self, group: list[ChannelLine]) -> list[AccountLine]:
        """Plan one burst; returns the calls held (released at their answer)."""
        first, label = group[0], self.labels[group[0].guid]
        if first.relay not in self.running:
            self.unreached += group
            return []
        calls = [c for s in group for c in self.caused.get(id(s), [])]
        self.answers.setdefault(label, []).extend(s.result for s in group)
        if len(group) > 1:
            self.faults.close()
            self.faults.pace(self.faults.slow_ms(calls), calls)
            self.faults.out.append(race(group, calls, label))
            return []
        flying = _in_flight(calls, self.moments)
        if flying or self.held.get(label):
            return self._held_send(first, calls, flying, label)
        self.faults.send(first, calls, label)
        return []

    def _held_send(self, send: ChannelLine, calls: list, flying: list, label: str) -> list[AccountLine]:
        """A send whose call was in flight at a kill or batch run (or whose GUID is held): in the background."""
        self.faults.close()
        self.faults.pace(None, [])
        out = self.faults.out
        if flying and not self.held.get(label):
            out.append(Planned(S.ServerFault(hold_guids=(label,)),
                               f"{lines(flying)}: received, and answered only after a kill or batch run: the account "
                               f"system holds {label} until then"))
        step = S.Send(label, amount=send.amount, src=send.src, dst=send.dst, slot=send.relay, background=True)
        out.append(Planned(step, f"{send.where}: {send.guid} ({label}) {send.amount} {send.src}→{send.dst} on relay "
                                 f"{send.relay}: {send.result}; in flight, sent in the background"))
        if flying:
            total = self.ordinal[id(flying[-1])]
            out.append(Planned(S.WaitCalls(label, count=total, timeout_s=1.0 if total > 1 else 5.0),
                               f"{lines(flying)}: the call reached the account system"))
            self.held[label] = self.held.get(label, 0) + len(flying)
        return flying

    def _operation(self, op: OpLine) -> None:
        self.faults.close()
        self.faults.pace(None, [])
        slot, where, out = op.relay, op.where, self.faults.out
        if op.event in KILLS and slot in self.running:
            out.append(Planned(S.Kill(slot), f"{where}: {op.event} of relay {slot} → it is killed"))
            self.running.discard(slot)
        if op.event in ("restart", "deploy", "start") and slot not in self.running:
            out.append(Planned(S.Start(slot), f"{where}: relay {slot} started again on the same ledger"))
            self.running.add(slot)
        if op.event == "batch":
            out.append(_batch(op, self.caused.get(id(op), []), self.labels, self.timeout_ms))


def _batch(op: OpLine, calls: list[AccountLine], labels: dict, timeout_ms: int) -> Planned:
    arg, where = op.argument, op.where
    if op.command == "reprocess":
        sent = f"; {lines(calls)}: {', '.join(labels[c.guid] for c in calls)} sent by this run" if calls else \
            "; it sent nothing"
        return Planned(S.Reprocess(max_attempts=max(1, int(arg))), f"{where}: reprocess --max-attempts {arg:g}{sent}",
                       tuple(labels[c.guid] for c in calls))
    if op.command == "resolve":
        safe = round(timeout_ms / 1000 + TOLERANCES.min_age_margin_s, 3)
        age = min(max(arg, safe), LIMIT_S)
        why = "" if age == arg else f" (here {age:g}: {'the scenario limit' if age == LIMIT_S else 'the safe minimum'})"
        return Planned(S.Resolve(min_age_s=age), f"{where}: resolve --min-age {arg:g}{why}, at its logged moment")
    keep = min(arg, LIMIT_S)
    return Planned(S.Purge(retention_s=keep), f"{where}: purge --retention {arg:g}"
                                              f"{'' if keep == arg else f' (here {keep:g}, the scenario limit)'}")


def _rules(bundle, labels: dict[str, str]) -> tuple[list[str], dict[str, list[str]]]:
    """The rules the account log shows broken, and by which GUIDs: called twice, debited twice."""
    calls = Counter(c.guid for c in bundle.account)
    applied = Counter(c.guid for c in bundle.account if c.code == "0000")
    broke = {"one-account-call": [labels[g] for g, n in calls.items() if n > 1],
             "one-debit": [labels[g] for g, n in applied.items() if n > 1]}
    broke = {rule: sorted(found, key=lambda x: int(x[1:])) for rule, found in broke.items() if found}
    rules = list(broke) + (["balances"] if "one-debit" in broke else [])
    return rules, broke


def _initial_relays(bundle) -> tuple[str, ...]:
    """Relay instances running from the start: every one the channel used, unless the operations log starts it
    before the channel used it."""
    first_start: dict[str, float] = {}
    for o in bundle.operations:
        if o.event == "start":
            first_start.setdefault(o.relay, o.at)
    first_use: dict[str, float] = {}
    for s in bundle.channel:
        first_use.setdefault(s.relay, s.at)
    used = sorted(set(first_use) | {"a"})
    return tuple(r for r in used if r not in first_start or first_use.get(r, first_start[r]) < first_start[r])
