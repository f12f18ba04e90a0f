"""From a bundle's logs to the steps that reproduce the night: order, clocks, in-flight calls, and faults.

    plan = reconstruct(bundle, account_timeout_ms=300)
    for planned in plan.walk(): ...            # the steps, planned as the night is walked, once

The channel log gives the sends (and what the relay answered), the account log what
arrived, when it was answered and what was applied, the operations log kills, starts and
batch runs. Everything is merged in time order; each account call is put down to its
latest cause (its GUID's latest send, or a reprocess run) as the walk reads ahead of
itself (Causes). Rules:
  - a call that was in flight (received, not yet answered) at a kill or a batch run is held
    at the account system (`server_fault: hold_guids`) from its send, sent in the
    background, waited for (`wait_calls`), and released where the account log answered it:
    a kill lands where the logs put it relative to calls in flight, and a batch run that
    ran early finds the call still being processed; the replay's ACCOUNT_TIMEOUT_MS is then
    at least HELD_TIMEOUT_MS, so the relay that sent a held call is still waiting for it
    when the batch runs, as in production, on every replay, however loaded the machine;
  - batch commands run at their logged moments with their logged arguments, and their rows
    are as old as they were: where the night passed the moment a resolve's --min-age (a purge's
    --retention) before it, the replay makes a mark (a short wait, named at its middle), and
    the batch run takes the time since that mark as its age (a resolve waits, if need be, until
    the safe --min-age of contract section 6 has passed since the mark): the rows the night
    changed before that moment are old enough for it, those changed after are not, without the
    night's hours (a run that comes before anything was sent finds an empty ledger: it runs at once, batch_runs.py);
  - answers the channel never got, refusals, races and slow bursts: faults.py; a call the account
    log shows answered E500 is answered E500 again (`server_fault: e500_once`), nothing applied;
  - sends to a relay instance that was down at that moment reached nothing: not replayed,
    and said where they were.
Opening balances come from balances.py, the account clock's offset from clocks.py. The walk
is a generator over the night in time order, once, reading the logs from disk (spill.py) a
window ahead of the step it plans: only the records of that window are in memory, and only the
GUIDs of a window (guids.Night), with the few whose records reach past it.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from relaychaos.engine import steps as S
from relaychaos.incidents import balances, clocks, guids
from relaychaos.incidents.batch_runs import Marks, batch_step
from relaychaos.incidents.causes import Causes, calls_of
from relaychaos.incidents.faults import FaultPlanner, Planned, Unreceived, lines, race, send_step
from relaychaos.incidents.guids import Night
from relaychaos.incidents.records import AccountLine, ChannelLine, OpLine
from relaychaos.tolerances import CURRENT as TOLERANCES

if TYPE_CHECKING:
    from relaychaos.incidents.bundle import Bundle

BURST_S = 0.05  # resends of one GUID closer than this went out together
KILLS = ("kill", "restart", "deploy")
HELD_TIMEOUT_MS = 3000  # the replay's ACCOUNT_TIMEOUT_MS at least, when calls are held across kills and batch runs


@dataclass
class Plan:
    night: Night  # the GUIDs: labels as the walk meets them, the census's rows (guids.py)
    rules: list[str]  # what the incident broke, by the logs
    broke: dict[str, list[str]]  # rule -> the labels of the production GUIDs that broke it
    relays: tuple[str, ...]
    accounts: balances.Accounts  # the opening balances (inferred ones are on disk, balances.Opened)
    walk: Callable[[], Iterator[Planned | Unreceived]]  # the steps, in order (call once)
    account_timeout_ms: int = 300  # the replay's ACCOUNT_TIMEOUT_MS
    clock_offset_s: float = 0.0
    notes: list[str] = field(default_factory=list)  # said at the top of the scenario file
    unreached: list[ChannelLine] = field(default_factory=list)  # sends to a relay that was down, filled in by the walk
    ledger_lock_delay_ms: int = 0  # the scenario's: set when copies of one GUID reached two instances together


def _bursts(sends: Iterable[ChannelLine]) -> Iterator[list[ChannelLine]]:
    """Sends in time order, resends of one GUID within BURST_S of its first grouped, whichever relay instances
    they reached (copies on two instances sharing a ledger race each other); groups in the order of their first
    send, each given once its window has passed (only open windows are kept)."""
    open_: dict[str, list[ChannelLine]] = {}
    order: deque = deque()
    for s in sends:
        while order and s.at - order[0][0].at > BURST_S:
            g = order.popleft()
            del open_[g[0].guid]
            yield g
        g = open_.get(s.guid)
        if g is not None:
            g.append(s)
        else:
            g = open_[s.guid] = [s]
            order.append(g)
    yield from order


def _flying(calls: Iterable[AccountLine], moments: list[float]) -> Iterator[AccountLine]:
    """The calls that were received before a kill or batch run and answered after it (a call without
    `answered_at` is taken as answered at once)."""
    for c in calls:
        i = bisect.bisect_left(moments, c.at)
        if i < len(moments) and c.answered_at is not None and c.answered_at > moments[i]:
            yield c


SHARED_LOCK_MS = 20  # as the suite's race-pairs-two-relays: each file lock on the ledger held this long


def _raced_across(sends: Iterable[ChannelLine]) -> str | None:
    """The note when copies of one GUID reached two relay instances within BURST_S (they race on the shared
    ledger, and the replay holds its locks as slow shared storage does); None when none did."""
    last: dict[str, ChannelLine] = {}  # the latest send of each GUID sent in the last BURST_S
    recent: deque[ChannelLine] = deque()
    for s in sends:
        while recent and s.at - recent[0].at > BURST_S:
            gone = recent.popleft()
            if last.get(gone.guid) is gone:
                del last[gone.guid]
        before = last.get(s.guid)
        if before is not None and before.relay != s.relay and s.at - before.at <= BURST_S:
            return (
                f"copies of one GUID reached two relay instances within {BURST_S * 1000:.0f} ms ({before.where}, "
                f"{s.where}): they race on the ledger the instances share, and the replay holds each file lock "
                f"on it {SHARED_LOCK_MS} ms (ledger_lock_delay_ms), as shared storage does, so that a "
                "check-then-insert of one instance meets the other's as production's did"
            )
        last[s.guid] = s
        recent.append(s)
    return None


def _held_timeout(bundle: Bundle, account_timeout_ms: int) -> tuple[int, str | None]:
    """ACCOUNT_TIMEOUT_MS for the replay: at least HELD_TIMEOUT_MS when calls are held (see the module doc)."""
    moments = sorted(o.at for o in bundle.operations if o.event in KILLS or o.event == "batch")
    if account_timeout_ms >= HELD_TIMEOUT_MS or next(_flying(bundle.account, moments), None) is None:
        return account_timeout_ms, None
    return HELD_TIMEOUT_MS, (
        f"ACCOUNT_TIMEOUT_MS is {HELD_TIMEOUT_MS} here, not {account_timeout_ms}: calls are held "
        "across kills and batch runs, and the relay that sent one must still be waiting for it "
        "when the batch runs, as it was in production (not racing its own time-out)"
    )


def reconstruct(bundle: Bundle, account_timeout_ms: int, offset_s: float | None = None) -> Plan:
    """The plan that replays the bundle's night (see the module doc)."""
    census = guids.take_census(bundle)
    offset, clock_note = clocks.clock_offset(bundle, census.gaps, offset_s)
    night = Night(census, offset)
    clocks.shift(bundle, offset)
    production_ms = account_timeout_ms
    account_timeout_ms, timeout_note = _held_timeout(bundle, account_timeout_ms)
    accounts, balance_notes = balances.opening(bundle, census.parties)
    shared = _raced_across(bundle.channel)
    walker = _Night(bundle, night, account_timeout_ms, production_ms)
    plan = Plan(
        night,
        night.rules,
        night.broke,
        walker.initial,
        accounts,
        walker.walk,
        account_timeout_ms,
        offset,
        [n for n in [clock_note, timeout_note, shared] if n] + balance_notes,
        ledger_lock_delay_ms=SHARED_LOCK_MS if shared else 0,
    )
    walker.unreached = plan.unreached
    return plan


class _Night:
    """The walk through the night in time order, planning steps (see the module doc)."""

    def __init__(self, bundle: Bundle, night: Night, account_timeout_ms: int, production_ms: int):
        self.bundle, self.night = bundle, night
        self.timeout_ms = account_timeout_ms
        self.faults = FaultPlanner(account_timeout_ms, production_ms)
        self.moments = sorted(o.at for o in bundle.operations if o.event in KILLS or o.event == "batch")
        self.initial = _initial_relays(bundle)
        self.running = set(self.initial)
        self.held: dict[str, int] = {}  # label -> calls of it held and not yet released
        self.unreached: list[ChannelLine] = []
        self.safe_s = round(account_timeout_ms / 1000 + TOLERANCES.min_age_margin_s, 3)  # contract section 6
        self.marks = Marks(bundle.operations)
        self.causes = Causes(bundle, night, production_ms)

    def walk(self) -> Iterator[Planned | Unreceived]:
        ops: Iterator[tuple[float, int, int, OpLine | list[ChannelLine] | tuple[OpLine, str]]]
        ops = ((o.at, 0, n, o) for n, o in enumerate(self.bundle.operations))
        sends = ((g[0].at, 1, n, g) for n, g in enumerate(_bursts(self.causes.ready())))
        marks = sorted((a[0].at - (a[0].argument or 0.0), 2, n, a) for n, a in enumerate(self.marks.of.values()))
        releases: list[tuple] = []
        out = self.faults.out
        for at, _, _, item in heapq.merge(ops, sends, marks):
            while releases and releases[0][0] <= at:
                self._release(heapq.heappop(releases)[2])
            self.night.passed(at, self.held)
            if isinstance(item, tuple):  # (a resolve or purge, the name of its mark)
                self.marks.passed(*item, out)
            elif isinstance(item, OpLine):
                self._operation(item)
            else:
                for call in self._sends(item):
                    heapq.heappush(releases, (call.answered_at, id(call), call))
            if out:
                yield from out
                out.clear()
        while releases:
            self._release(heapq.heappop(releases)[2])
        self.faults.close()
        self.faults.pace(None, [])
        yield from out
        out.clear()

    def _e500s(self, calls: list[AccountLine]) -> None:
        """The account system answers E500 to each call the account log shows answered E500 (not applied)."""
        failed = [c for c in calls if c.code == "E500"]
        if failed:
            labels = tuple(dict.fromkeys(self.night.label(c.guid) for c in failed))
            self.faults.out.append(
                Planned(
                    S.ServerFault(e500_once=labels),
                    f"{lines(failed)}: the account system answered E500 (nothing applied): it does so again",
                )
            )

    def _release(self, call: AccountLine) -> None:
        label = self.night.label(call.guid)
        if self.held.get(label):
            self.held[label] = 0
            self.faults.out.append(
                Planned(
                    S.Release((label,)),
                    f"{call.where}: the account system answered {call.code} here: {label} is released",
                )
            )

    def _sends(self, group: list[ChannelLine]) -> list[AccountLine]:
        """Plan one burst; returns the calls held (released at their answer)."""
        label = self.night.label(group[0].guid)
        down = [s for s in group if s.relay not in self.running]
        if down:
            self.unreached += down
            self.faults.out.append(
                Unreceived(
                    f"{lines(down)}: {down[0].guid} ({label}) reached relay "
                    f"{down[0].relay} while it was down ({down[0].result}): nothing received "
                    "it, not replayed",
                )
            )
            group = [s for s in group if s.relay in self.running]
            if not group:
                return []
        self.marks.sending(self.faults.out)
        first = group[0]
        calls = [c for s in group for c in calls_of(s)]
        self._e500s(calls)
        if len(group) > 1:
            self.faults.close()
            self.faults.pace(self.faults.slow_ms(calls), calls)
            self.faults.out.append(race(group, calls, label))
            return []
        flying = list(_flying(calls, self.moments))
        if flying or self.held.get(label):
            return self._held_send(first, flying, label)
        self.faults.send(first, calls, label)
        return []

    def _held_send(self, send: ChannelLine, flying: list, label: str) -> list[AccountLine]:
        """A send whose call was in flight at a kill or batch run (or whose GUID is held): in the background."""
        self.faults.close()
        self.faults.pace(None, [])
        out = self.faults.out
        if flying and not self.held.get(label):
            out.append(
                Planned(
                    S.ServerFault(hold_guids=(label,)),
                    f"{lines(flying)}: received, and answered only after a kill or batch run: the account "
                    f"system holds {label} until then",
                )
            )
        step = send_step(label, send, background=True)
        out.append(
            Planned(
                step,
                f"{send.where}: {send.guid} ({label}) {send.amount} {send.src}→{send.dst} on relay "
                f"{send.relay}: {send.result}; in flight, sent in the background",
                got=(send.result,),
            )
        )
        if flying:
            total = flying[-1].n
            out.append(
                Planned(
                    S.WaitCalls(label, count=total, timeout_s=1.0 if total > 1 else 5.0),
                    f"{lines(flying)}: the call reached the account system",
                )
            )
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
            calls = self.causes.of_run(op) if op.command == "reprocess" else []
            self._e500s(calls)
            out.append(batch_step(op, calls, self.night, self.safe_s, self.marks.of_run(op)))


def _initial_relays(bundle: Bundle) -> tuple[str, ...]:
    """Relay instances running from the start: every one the channel used, unless the operations log starts it
    before the channel used it."""
    first_start: dict[str, float] = {}
    for o in bundle.operations:
        if o.event == "start":
            first_start.setdefault(o.relay, o.at)
    first_use: dict[str, float] = {}
    for s in bundle.channel:
        if s.relay not in first_use:
            first_use[s.relay] = s.at
    used = sorted(set(first_use) | {"a"})
    return tuple(r for r in used if r not in first_start or first_use.get(r, first_start[r]) < first_start[r])
