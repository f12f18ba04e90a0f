"""Views of a history that the checkers share: channel calls, account calls, snapshots, batches, faults.

Everything here is derived from the history alone (the account system's call
log arrives in it as the final `account-stats` observation), so checks can be
re-run on a saved history. `Facts(source)` reads the source once, folding each
event into indexes (per GUID, per process, sorted fault moments); every question
the rules ask is then a dictionary look-up or a bisection, so a check is linear
in the history's length. The source is any iterable of events (a History, a list,
a relaychaos.history.HistoryFile); it is iterated again only if `events` is asked for.
"""

from __future__ import annotations

import re
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import cast

from relaychaos.checkers.calls import Batch, ChannelCall, EndedBatch
from relaychaos.checkers.collection import no_collection
from relaychaos.checkers.faults import FaultState, FaultTimeline
from relaychaos.events import BATCH_COMMANDS, REFUSED, Event, Op
from relaychaos.records.base import UNSET
from relaychaos.records.header import HistoryHeader
from relaychaos.tolerances import Tolerances
from relaychaos.words import Words

DEFINITE = {"0000", "B201", "B202", "B203", "E500"}  # the course contract's definite answers
ANY_DEFINITE = DEFINITE | {REFUSED}  # and a keyed service's definite refusal: what every profile's rules read
KNOWN_CODES = DEFINITE | {"E400", "E901", "E902", "E903", "E904"}  # the course contract's
_DIGITS = re.compile(r"(\d+)")
_RUN_GUID = re.compile(r"[0-9a-f]{12}-[0-9a-f]{8}")  # the form of the run's GUIDs (engine.runner.Runner.guid)
DISTURBING = (Op.KILL, Op.SERVER_FAULT, Op.ADD_TOXIC, Op.DISABLE_PROXY)  # faults that may change a first send's answer
# the ops Facts._keep files away (a tuple: compared, never hashed, as an event's op may be anything)
_KEPT: tuple[str, ...] = (Op.STEP, Op.START, *BATCH_COMMANDS, Op.LEDGER_SNAPSHOT, Op.SCENARIO, Op.ACCOUNT_STATS)
_KEPT += (Op.LEDGER_SCHEMA, Op.TAMPERED)


def _named(v: dict) -> list:
    """The GUIDs an event's value names: its guid, the GUIDs held or released (the header's labels too)."""
    out = [v.get("guid")]
    for key in ("hold_guids", "guids"):
        if isinstance(v.get(key), (list, tuple, dict, set)):
            out.extend(v[key])
    return out


def _always_shown(e: Event) -> bool:
    """Fault and process events: part of every GUID's timeline."""
    return (
        (e.process == "nemesis" and not (e.f == Op.ADD_TOXIC and e.type == "ok"))
        or ("slot" in e.value and e.type != "invoke")
        or (e.f in BATCH_COMMANDS and "run" in e.value)
    )


class Facts:
    """The history, indexed for checking (see the module doc)."""

    def __init__(self, history: Iterable[Event]):
        self.history = history
        self.scenario: dict = {}
        self.start = 0.0
        self.channel: list[ChannelCall] = []
        self.snapshots: list[Event] = []  # the ledger snapshots that were read, in order
        self.batches: list[Batch] = []
        self.faults = FaultTimeline()
        self.schema_events: list[Event] = []  # ledger-schema readings and failed snapshots, in order
        self.tampered: list[Event] = []
        self.failed_steps: list[Event] = []
        self.starts = {"ok": 0, "fail": 0}  # serve's starts that answered its health path, and those that did not
        self._labels: dict[str, str] = {}
        self._stats: dict | None = None
        self._by_guid: dict[str | None, list[ChannelCall]] = {}  # None: malformed bodies that named no GUID
        self._named: dict[str, list[int]] = {}  # GUID -> events naming it (not fault or process events)
        self._shown: list[int] = []  # fault and process events
        self._times: dict[str, list[float]] = {"disturbing": [], Op.KILL: [], Op.HEAL: []}
        self._open_batches: dict[str, Batch] = {}
        self._header: dict | None = None
        with no_collection():
            self._read(history)

    def _read(self, history: Iterable[Event]) -> None:
        """One pass: channel calls folded by process, every other kind of event by `_fold`."""
        open_calls: dict[str, ChannelCall] = {}
        times, named = array("d"), self._named
        for e in history:
            times.append(e.time)
            v = e.value
            if e.f != Op.TRANSFER or e.process == "nemesis" or "slot" in v or "hold_guids" in v or "guids" in v:
                self._fold(e)
                continue
            if e.type == "invoke":
                open_calls[e.process] = call = ChannelCall(e)
                self.channel.append(call)
            elif e.process in open_calls:
                open_calls.pop(e.process).complete(e)
            guid = v.get("guid")
            if guid is None:
                continue
            try:
                seen = named.get(guid)
            except TypeError:
                continue  # not a GUID
            if seen is None:
                named[guid] = [e.index]
            else:
                seen.append(e.index)
        self.start = times[0] if times else 0.0
        self.faults.done(times)
        for c in self.channel:
            self._by_guid.setdefault(c.guid, []).append(c)
        for at in self._times.values():
            at.sort()
        self._snapshot_at = [s.index for s in self.snapshots]

    def _fold(self, e: Event) -> None:
        """Any event but a channel call's: faults, what `_keep` keeps, the times asked about, the GUIDs it names."""
        f, v = e.f, e.value
        if e.process == "nemesis":
            self.faults.see(e)
        if f == Op.GUID:
            self._labels[v["guid"]] = v["label"]
            return  # not part of any GUID's timeline
        if f in _KEPT:
            self._keep(e)
        if f in DISTURBING:
            self._times["disturbing"].append(e.time)
        if f in (Op.KILL, Op.HEAL):
            self._times[f].append(e.time)
        if _always_shown(e):
            self._shown.append(e.index)
            return
        if "guid" not in v and "hold_guids" not in v and "guids" not in v:
            return
        for name in _named(v):
            if name is None:
                continue
            try:
                seen = self._named.setdefault(name, [])
            except TypeError:
                continue  # not a GUID
            if not seen or seen[-1] != e.index:
                seen.append(e.index)

    def _keep(self, e: Event) -> None:
        """An event of the kinds in _KEPT: failed steps, batches, snapshots, the header, the account system's
        record, schema readings, tampering."""
        f, v = e.f, e.value
        if f == Op.STEP:
            if e.type == "fail":
                self.failed_steps.append(e)
        elif f == Op.START:
            if e.type in self.starts:
                self.starts[e.type] += 1
        elif f in BATCH_COMMANDS and "run" in v:
            if e.type == "invoke":
                self._open_batches[e.process] = batch = Batch(f, e, None)
                self.batches.append(batch)
            elif e.process in self._open_batches:
                self._open_batches.pop(e.process).end = e
        elif f == Op.LEDGER_SNAPSHOT and e.type == "ok":
            self.snapshots.append(self._snapshot(e))
        elif f == Op.LEDGER_SNAPSHOT and e.type == "fail":
            self.schema_events.append(e)
        elif f == Op.SCENARIO and self._header is None:
            self.scenario = self._header = v
        elif f == Op.ACCOUNT_STATS:
            self._stats = v["stats"]
        elif f == Op.LEDGER_SCHEMA:
            self.schema_events.append(e)
        elif f == Op.TAMPERED:
            self.tampered.append(e)

    def _snapshot(self, e: Event) -> Event:
        """The snapshot as kept: each row unchanged since the snapshot before shares that one's row object and
        each GUID one string, so a long run's many snapshots of one ledger cost little more than its changes."""
        before = self.snapshots[-1].value["rows"] if self.snapshots else {}
        rows = {}
        for guid, row in e.value["rows"].items():
            same = before.get(guid)
            rows[sys.intern(guid) if type(guid) is str else guid] = same if same == row else row
        return Event(e.index, e.time, e.process, e.type, e.f, {**e.value, "rows": rows})

    @cached_property
    def events(self) -> list[Event]:
        """Every event, in memory (the source read again): for small histories and reports, not the rules."""
        return list(self.history)

    @cached_property
    def header(self) -> HistoryHeader:
        """The history's header, typed (relaychaos.records.header); `scenario` is its plain value."""
        return HistoryHeader.from_builtins(self.scenario, "a history's header")

    @cached_property
    def words(self) -> Words:
        """How the history's relay names what the history records in the contract's words (relaychaos.words)."""
        return Words.of(self.header.profile, self.header.commands)

    @cached_property
    def tolerances(self) -> Tolerances:
        """The tolerances this history was recorded under (see relaychaos.tolerances)."""
        recorded = self.header.tolerances
        return Tolerances.from_dict(recorded if recorded is not UNSET else None)

    @cached_property
    def timeout_ms(self) -> float:
        return float(self.header.account_timeout_ms)

    @cached_property
    def labels(self) -> dict[str, str]:
        """Real GUID -> the scenario's label for it."""
        out = self.header.label_of()
        out.update(self._labels)
        return out

    def guid_order(self, guid: str | None) -> tuple:
        """A sort key putting GUIDs in their labels' natural order (g2 before g10; no GUID first).

        Real GUIDs carry a random run tag, so ordering by them would list the same GUIDs
        differently on every run; ordered by label, a regrade lists them alike. A GUID the relay
        made from one of the run's (`<guid>-r2`) is ordered by that GUID's label and the rest."""
        if guid is None:
            return ()
        label = str(guid)
        if label in self.labels:
            label = self.labels[label]
        else:
            label = _RUN_GUID.sub(lambda m: self.labels.get(m.group(0), m.group(0)), label)
        return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(label) if part)

    @cached_property
    def intents(self) -> dict[str, set[str]]:
        """The payment each channel request meant (its intent label) -> the GUIDs it was sent under."""
        out: dict[str, set[str]] = {}
        for c in self.channel:
            if c.request is not None:
                guid = cast(str, c.guid)  # a well-formed request's own GUID
                out.setdefault(c.intent or guid, set()).add(guid)
        return out

    def channel_for(self, guid: str | None) -> list[ChannelCall]:
        return self._by_guid.get(guid, [])

    @property
    def never_served(self) -> bool:
        """serve was started and never answered its health path: no relay of the run ever ran."""
        return self.starts["fail"] > 0 and self.starts["ok"] == 0

    @property
    def stats(self) -> dict:
        return self._stats if self._stats is not None else {"calls": [], "guids": {}, "balances": {}}

    @property
    def has_stats(self) -> bool:
        """Whether the history holds the account system's record (its final observation)."""
        return self._stats is not None

    @cached_property
    def account_calls(self) -> list[dict]:
        return self.stats.get("calls", [])

    @cached_property
    def _calls_by_guid(self) -> dict[str | None, list[dict]]:
        out: dict[str | None, list[dict]] = {}
        for c in self.account_calls:
            out.setdefault(c.get("guid"), []).append(c)
        return out

    def calls_for(self, guid: str) -> list[dict]:
        return self._calls_by_guid.get(guid, [])

    @cached_property
    def _not_found_at(self) -> dict[str | None, list[float]]:
        """GUID -> when the account system's query API answered that it had never applied it, in order."""
        out: dict[str | None, list[float]] = {}
        for q in self.stats.get("queries", []):
            if not q.get("found"):
                out.setdefault(q.get("guid"), []).append(q["at"])
        return out

    def asked_before(self, guid: str, call: dict) -> bool:
        """Whether `call` is a resend the relay asked for: after every earlier call of its GUID was answered, the
        query API said the GUID was never applied, before this call arrived (query before resending)."""
        earlier = [c for c in self.calls_for(guid) if c["received_at"] < call["received_at"]]
        if not earlier or any(c.get("answered_at") is None for c in earlier):
            return False
        after = max(c["answered_at"] for c in earlier)
        return any(after < at < call["received_at"] for at in self._not_found_at.get(guid, ()))

    @cached_property
    def final_rows(self) -> dict[str, dict]:
        return self.snapshots[-1].value["rows"] if self.snapshots else {}

    @cached_property
    def snapshot_guids(self) -> set[str]:
        """Every GUID some ledger snapshot showed a row for."""
        return {g for s in self.snapshots for g in s.value["rows"]}

    @cached_property
    def purged(self) -> dict[str, list[float]]:
        """GUID -> the times a purge deleted its DONE row as the contract lets it (at least --retention old).

        Purge forgets a GUID (contract §5), so a call after that is the relay meeting it anew: the
        money rules count calls and debits per life of a ledger row (see `lives`), not per GUID.
        A row deleted younger than its retention starts no new life (purge-retention says why).
        """
        out: dict[str, list[float]] = {}
        for b, end_wall, rows0, rows1, _ in self.batch_windows("purge"):
            for guid, row in rows0.items():
                age = end_wall - row["updated_at"] if "updated_at" in row else None  # a service's table: no times
                if (
                    row.get("status") == "DONE"
                    and guid not in rows1
                    and (age is None or age >= b.argument - self.tolerances.clock_slack_s)
                ):
                    out.setdefault(guid, []).append(b.end.time)
        return out

    def batch_windows(
        self, command: str
    ) -> Iterator[tuple[EndedBatch, float, dict[str, dict], dict[str, dict], float]]:
        """(batch, wall time it ended, ledger rows just before it, just after it, when the rows before were read)
        for each finished run of `command`."""
        for b in self.batches:
            if b.command != command or b.argument is None or b.end is None:
                continue
            before, after = self.snapshots_around(b.invoke.index, b.end.index)
            if before and after:
                ended = cast(EndedBatch, b)  # its end and argument were just seen
                yield ended, b.end.value.get("wall", b.wall), before.value["rows"], after.value["rows"], before.time

    def lives(self, guid: str) -> list[list[dict]]:
        """The GUID's account calls, split where a purge deleted its DONE row as the contract lets it."""
        cuts = self.purged.get(guid)
        if not cuts:
            return [self.calls_for(guid)]
        groups: list[list[dict]] = [[] for _ in range(len(cuts) + 1)]
        for c in self.calls_for(guid):
            groups[bisect_left(cuts, c["received_at"])].append(c)
        return [g for g in groups if g]

    def snapshots_around(self, first: int, last: int) -> tuple[Event | None, Event | None]:
        """The last snapshot before history index `first`, and the first one after `last` (None: there is none)."""
        at = self._snapshot_at
        i, j = bisect_left(at, first), bisect_right(at, last)
        return (self.snapshots[i - 1] if i else None), (self.snapshots[j] if j < len(at) else None)

    @cached_property
    def channel_guids(self) -> dict[str, dict]:
        """Every GUID the channel sent as a well-formed request, with its first request body.

        A body refused with E400 for fields beyond the four (v1.1) left nothing behind: it
        does not make its GUID used.
        """
        out: dict[str, dict] = {}
        for c in self.channel:
            refused = c.extra_fields and c.answered and c.code == "E400"
            if c.request is None or refused:
                continue
            guid = cast(str, c.guid)  # a well-formed request's own GUID
            if guid not in out:
                out[guid] = c.request
        return out

    def hub_disturbed(self, t0: float, t1: float) -> bool:
        """Whether a hub proxy (channel → relay) had a toxic or was down at some moment from t0 to t1."""
        return self.faults.hub_disturbed(t0, t1)

    def happened(self, what: str, t0: float, t1: float) -> bool:
        """Whether an event of a kind ('disturbing': DISTURBING; 'kill'; 'heal') happened from t0 to t1."""
        times = self._times[what]  # sorted once read
        i = bisect_left(times, t0)
        return i < len(times) and times[i] <= t1

    def events_for(self, guid: str) -> tuple[int, ...]:
        """Every history event naming the GUID, plus fault and process events, in order (GUID None: only the
        fault and process events)."""
        return tuple(sorted(self._shown + self._named.get(guid, [])))

    def call_seqs(self, guid: str) -> tuple[int, ...]:
        return tuple(c["seq"] for c in self.calls_for(guid))

    def account_states(self, t0: float, t1: float) -> list[tuple[bool, set[tuple[str, str]]]]:
        """The account proxy's states from t0 to t1: (disabled, {(toxic kind, stream)}) at t0 and at each fault
        event up to t1."""
        states = (self.faults.states[k] for k in self.faults.moments(t0, t1))
        return [(s.account_down, {(x["kind"], x["stream"]) for x in s.account_toxics}) for s in states]

    def faults_at(self, t: float) -> FaultState:
        """The fault state at monotonic time t: toxics and disabled proxies by side, held GUIDs, delay."""
        return self.faults.at(t)
