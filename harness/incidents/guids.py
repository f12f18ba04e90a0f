"""The night's GUIDs: what the logs say of each, checked, and their labels as the walk meets them.

    census = take_census(bundle)       # one pass over the records sorted by GUID; BundleError on what cannot be right
    night = Night(census, offset_s)    # labels, the rules broken and by which labels, the GUIDs kept whole
    st = night.state(guid)             # in the walk: its GuidState (made at its first send)

The census sorts every record of the channel and account logs, and the ledger's rows, by GUID (spill.Runs: on disk
past a run) and reads each GUID's together, one at a time: its first send's time, how many calls and debits it got,
how far its records reach, the ledger's last word on it. What it keeps per GUID is a row in a second Runs, in the
order of the GUIDs' first sends, which is the order of their labels (`g1`, `g2`, ...). Errors (a scenario built on
them would be a different night), each naming the file and line, the first in the logs' own order: a GUID the account
system received that the channel never sent (said when it differs only in case from one it sent); an account call
whose amount or parties differ from the channel's first request for that GUID; a channel `0000` for a GUID the
account system has no call for. Notes: GUIDs that differ only in case (the relay takes them as two, and so does the
import). It also gives the two GUIDs whose first call came soonest after their first send (or furthest before it:
clocks.py reads the clocks' offset from them).

The walk holds a GuidState only while a GUID's records can still come (WINDOW_S from its first send) or, for the
few whose records reach further (a resend an hour later, a reprocess run's call), for the whole night: memory is the
window's GUIDs and those, not the night's.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from relaychaos.incidents.balances import Parties
from relaychaos.incidents.mapping import BundleError
from relaychaos.incidents.records import AccountLine, ChannelLine
from relaychaos.incidents.spill import Runs

if TYPE_CHECKING:
    from relaychaos.incidents.bundle import Bundle

Gap = tuple[float, AccountLine, ChannelLine]  # (first call's time - first send's, the call, the send) of a GUID
SEND, CALL, WORD = range(3)  # the kinds of a census row, in the order a GUID's are read
WINDOW_S = 180.0  # a GUID whose records all come within this long of its first send is let go once it has passed


def label_of(number: int) -> str:
    """The scenario's label of the night's GUID number N: gN."""
    return f"g{number}"


@dataclass(slots=True)
class GuidState:
    """A GUID the walk is meeting: its label, its latest send (while the window of causes.py holds it), its calls
    put down to their causes so far."""

    number: int
    first_at: float
    last: ChannelLine | None = None
    last_at: float | None = None
    seen: int = 0

    @property
    def label(self) -> str:
        return label_of(self.number)


@dataclass
class Census:
    """What the logs say of each GUID: `rows` in label order, (first send's time, its place, GUID, calls, debits,
    the latest of its channel records, of its account records (times and answers, on the account clock), the
    ledger's word or None)."""

    rows: Runs
    parties: Parties
    gaps: list[Gap] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)


def _where(bundle: Bundle, r: ChannelLine | AccountLine) -> str:
    return f"{bundle.folder / r.file}, line {r.line}"


def _sorted_by_guid(bundle: Bundle) -> Runs:
    """Every send, call and ledger row as (GUID folded to lower case, GUID, kind, time, its place, its fields)."""
    rows = Runs()
    add = rows.add
    for kind, log in ((SEND, bundle.channel), (CALL, bundle.account)):
        for n, (at, v) in enumerate(log.values()):
            guid = v[3]
            add((guid.lower(), guid, kind, at, n, v))
    for n, (guid, word) in enumerate(bundle.ledger):
        add((guid.lower(), guid, WORD, 0.0, n, word))
    rows.close()
    return rows


def _groups(rows: Runs) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of each GUID folded to lower case (the GUIDs differing only in case together)."""
    group: list[tuple[Any, ...]] = []
    for row in rows:
        if group and row[0] != group[0][0]:
            yield group
            group = []
        group.append(row)
    if group:
        yield group


class _Taker:
    """The census's pass (see the module doc): the first problem in the logs' order is kept, raised at the end."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self.out = Runs()
        self.parties = Parties()  # for the opening balances
        self.gaps: list[tuple[float, float, int, AccountLine, ChannelLine]] = []  # a heap of the two smallest gaps
        self.call_error: tuple[tuple[float, int], AccountLine, ChannelLine | None, str | None] | None = None
        self.unanswered: tuple[tuple[float, int], ChannelLine] | None = None
        self.twins: list[tuple[tuple[float, int], ChannelLine, ChannelLine]] = []

    def take(self, group: list[tuple[Any, ...]]) -> None:
        if group[0][1] == group[-1][1]:  # one GUID (the rows are sorted by it): no other differs from it in case
            self._guid(group[0][1], group, None)
            return
        by_guid: dict[str, list[tuple[Any, ...]]] = {}
        for row in group:
            by_guid.setdefault(row[1], []).append(row)
        sent = {g: rows[0] for g, rows in by_guid.items() if rows[0][2] == SEND}
        firsts = sorted((r[3], r[4], g) for g, r in sent.items())  # the GUIDs of the group in first-send order
        if len(firsts) > 1:
            first = ChannelLine(*sent[firsts[0][2]][5])
            self.twins += [((at, n), ChannelLine(*sent[g][5]), first) for at, n, g in firsts[1:]]
        twin = sent[firsts[0][2]][5] if firsts else None  # the fields of the group's GUID sent first
        for guid, rows in by_guid.items():
            self._guid(guid, rows, twin)

    def _guid(self, guid: str, rows: list[tuple[Any, ...]], twin: tuple[Any, ...] | None) -> None:
        """One GUID's rows (fields by place: a record is made only for what a message or a gap cites)."""
        sends, calls, word = [], [], None  # the rows are in the order of kind: sends, calls, the ledger's
        for r in rows:
            kind = r[2]
            if kind == SEND:
                sends.append(r)
            elif kind == CALL:
                calls.append(r)
            else:
                word = r[5]
        if not sends:
            if calls:
                c = AccountLine(*calls[0][5])
                self._call_error((c.at, calls[0][4]), c, ChannelLine(*twin) if twin else None, None)
            return
        first = sends[0][5]  # file, line, at, guid, src, dst, amount, result, relay
        request = (first[6], first[4], first[5])
        debits = 0
        for row in calls:
            v = row[5]  # file, line, at, guid, src, dst, amount, code, answered_at
            if (v[6], v[4], v[5]) != request:
                self._call_error((row[3], row[4]), AccountLine(*v), ChannelLine(*first), "differs")
            debits += v[7] == "0000"
            self.parties.call(row[4], v[7], v[4], v[5], v[6], f"{v[0]} line {v[1]}" if v[7] == "B201" else "")
        for pair in {(r[5][4], r[5][5]) for r in sends} - ({request[1:]} if calls else set()):
            self.parties.named(*pair)
        if not calls:
            unanswered = next((r for r in sends if r[5][7] == "0000"), None)
            if unanswered is not None and (self.unanswered is None or unanswered[3:5] < self.unanswered[0]):
                self.unanswered = ((unanswered[3], unanswered[4]), ChannelLine(*unanswered[5]))
        else:
            # the larger the entry, the smaller the gap; of equal gaps, the call first in the account log's order
            key = (first[2] - calls[0][3], -calls[0][3], -calls[0][4])
            if len(self.gaps) < 2 or key > self.gaps[0][:3]:
                entry = (*key, AccountLine(*calls[0][5]), ChannelLine(*first))
                (heapq.heappush if len(self.gaps) < 2 else heapq.heapreplace)(self.gaps, entry)
        call_end = max((max(r[3], r[5][8] or r[3]) for r in calls), default=-math.inf)
        self.out.add((first[2], sends[0][4], guid, len(calls), debits, sends[-1][3], call_end, word))

    def _call_error(
        self, place: tuple[float, int], c: AccountLine, other: ChannelLine | None, kind: str | None
    ) -> None:
        if self.call_error is None or place < self.call_error[0]:
            self.call_error = (place, c, other, kind)

    def raise_first(self) -> None:
        """The first problem the logs' order meets, as index-time errors were always said."""
        if self.call_error is not None:
            _, c, other, kind = self.call_error
            where = _where(self.bundle, c)
            if kind == "differs":
                assert other is not None
                _differs(c, other, where)
            _never_sent(c, where, other)
        if self.unanswered is not None:
            r = self.unanswered[1]
            raise BundleError(
                f"the relay answered 0000 for GUID {r.guid}, but the account log has no call for it",
                where=_where(self.bundle, r),
                fix="the account log is incomplete (add the call), or this line's GUID or result is wrong",
            )


def take_census(bundle: Bundle) -> Census:
    """The census of the night's GUIDs (see the module doc); BundleError on the first problem."""
    taker = _Taker(bundle)
    for group in _groups(_sorted_by_guid(bundle)):
        taker.take(group)
    taker.raise_first()
    taker.out.close(merged=True)  # read four times: by Night, and by the incident block's three parts
    for _, r, other in sorted(taker.twins, key=lambda t: t[0]):
        bundle.notes.append(
            f"{_where(bundle, r)}: GUID {r.guid} differs only in case from {other.guid} ({other.where}): they are "
            'taken as two GUIDs, as a relay takes them; if one system changed the case, set guid_case = "lower" for '
            "that log in incident.toml"
        )
    gaps = sorted(((-g, c, send) for g, _, _, c, send in taker.gaps), key=lambda x: (x[0], x[1].line))
    return Census(taker.out, taker.parties, gaps)


def _differs(c: AccountLine, send: ChannelLine, where: str) -> NoReturn:
    raise BundleError(
        f"GUID {c.guid}: the account system received {c.amount} {c.src}→{c.dst}, the channel "
        f"sent {send.amount} {send.src}→{send.dst} ({send.where})",
        where=where,
        fix="the logs disagree on the transfer: check both lines (a unit? a GUID reused?) and "
        "correct the one that is wrong",
    )


def _never_sent(c: AccountLine, where: str, twin: ChannelLine | None) -> NoReturn:
    if twin is not None:
        raise BundleError(
            f"GUID {c.guid} is not in the channel log, but {twin.guid} ({twin.where}) differs from it only in case",
            where=where,
            fix='one system changed the GUID\'s case: set guid_case = "lower" (or "upper") in '
            "[logs.account] and [logs.channel] of incident.toml",
        )
    raise BundleError(
        f"GUID {c.guid} is in the account log but the channel log never sent it",
        where=where,
        fix="add the channel's request for it to the channel log, or drop the line if another client "
        "sent it (a relay that minted a new GUID, rule guid-preserved, cannot be imported: write "
        "that scenario by hand, see scenarios/regressions/recovery-minted-new-guid.yaml)",
    )


class Night:
    """The night's GUIDs as the walk meets them (see the module doc): `rules` and `broke` (rule -> labels) from the
    census; `state(guid)` made at a GUID's first send, numbered in that order; `passed(at)` lets go of the GUIDs
    whose window is behind `at` (unless `holding` them); `guid_of` the production GUID of each label that broke a
    rule."""

    def __init__(self, census: Census, offset_s: float):
        self.census = census
        self.kept: set[str] = set()  # GUIDs whose records reach past WINDOW_S: held for the whole night
        self.guid_of: dict[str, str] = {}
        broke: dict[str, list[str]] = {"one-account-call": [], "one-debit": []}
        for number, (first_at, _, guid, calls, debits, last_send, call_end, _) in enumerate(census.rows, 1):
            if max(last_send, call_end + offset_s) - first_at > WINDOW_S:
                self.kept.add(guid)
            if calls > 1 or debits > 1:
                self.guid_of[label_of(number)] = guid
                broke["one-account-call"] += [label_of(number)] if calls > 1 else []
                broke["one-debit"] += [label_of(number)] if debits > 1 else []
        self.broke = {rule: found for rule, found in broke.items() if found}
        self.rules = list(self.broke) + (["balances"] if "one-debit" in self.broke else [])
        self._live: dict[str, GuidState] = {}
        self._order: deque[tuple[float, str]] = deque()
        self.numbered = 0

    def state(self, guid: str, at: float | None = None) -> GuidState:
        """The GUID's state; made (and numbered) at its first send, `at`."""
        st = self._live.get(guid)
        if st is None:
            assert at is not None, f"GUID {guid}: met again after its window was let go"
            self.numbered += 1
            st = self._live[guid] = GuidState(self.numbered, at)
            if guid not in self.kept:
                self._order.append((at, guid))
        return st

    def label(self, guid: str) -> str:
        return self.state(guid).label

    def passed(self, at: float, holding: dict[str, int]) -> None:
        """Let go of the GUIDs first sent more than WINDOW_S before `at`, unless a call of theirs is held."""
        while self._order and at - self._order[0][0] > WINDOW_S:
            _, guid = self._order.popleft()
            st = self._live[guid]
            if holding.get(st.label):
                self._order.append((at, guid))  # looked at again a window later
                continue
            del self._live[guid]

    def incident(self) -> Iterator[tuple[str, str, int, str | None]]:
        """(label, production GUID, its calls, the ledger's word on it) of every GUID, in label order."""
        for number, (_, _, guid, calls, _, _, _, word) in enumerate(self.census.rows, 1):
            yield label_of(number), guid, calls, word
