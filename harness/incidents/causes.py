"""Each account call of a night put down to its cause, as the night is read in time order a window ahead of the walk
that plans its steps (relaychaos.incidents.reconstruct).

    causes = Causes(bundle, night, account_timeout_ms)
    for send in causes.ready(): calls_of(send)         # the sends in time order, each with the calls it caused
    calls = causes.of_run(op)                           # a reprocess run's calls

A call's cause is its GUID's latest send before it, or the latest reprocess run when that came after the send. A
call more than LATE_S (plus the time-out) after its send, with no run in between, or more than REPROCESS_S after its
run, is an error naming its line: a wrong time, or a run missing from the operations log.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from relaychaos.incidents.guids import GuidState, Night
from relaychaos.incidents.mapping import BundleError
from relaychaos.incidents.records import AccountLine, ChannelLine, OpLine

if TYPE_CHECKING:
    from relaychaos.incidents.bundle import Bundle

LATE_S = 60.0  # a call this long after its send, with no batch run in between, was not sent by it
REPROCESS_S = 600.0  # a reprocess run sends its calls within this long of its start


def _merged(bundle: Bundle) -> Iterator[tuple[float, int, int, OpLine | ChannelLine | AccountLine]]:
    """Sends, operations and account calls in one time order (at equal times: operations, sends, calls)."""
    return heapq.merge(
        ((o.at, 0, i, o) for i, o in enumerate(bundle.operations)),
        ((s.at, 1, i, s) for i, s in enumerate(bundle.channel)),
        ((c.at, 2, i, c) for i, c in enumerate(bundle.account)),
    )


class Causes:
    """Each account call put down to its cause (its GUID's latest send, or reprocess run, before it: the cause's
    `calls`), as the night is read in time order ahead of the walk: a send is handed on once the night is read
    `late` past it (a later call cannot be its); a reprocess run is planned once the night is read up to the next
    run, or REPROCESS_S past it (every call in between is its or a later send's). Only the sends read and not yet
    handed on are held in memory."""

    def __init__(self, bundle: Bundle, night: Night, account_timeout_ms: int):
        self.bundle, self.night = bundle, night
        self.late = LATE_S + account_timeout_ms / 1000
        self.stream = _merged(bundle)
        self.ahead = next(self.stream, None)  # the next record not yet read
        self.sends: deque[ChannelLine] = deque()  # read, not yet handed on
        self.last_reprocess: OpLine | None = None
        runs = [o for o in bundle.operations if o.command == "reprocess"]
        self.until = {
            id(o): min(o.at + REPROCESS_S, runs[i + 1].at if i + 1 < len(runs) else math.inf)
            for i, o in enumerate(runs)
        }

    def read_to(self, t: float) -> None:
        """Read every record at or before t."""
        while self.ahead is not None and self.ahead[0] <= t:
            self._read(self.ahead[3])
            self.ahead = next(self.stream, None)

    def ready(self) -> Iterator[ChannelLine]:
        """The night's sends in time order, each with its calls."""
        while True:
            if not self.sends:
                if self.ahead is None:
                    return
                self.read_to(self.ahead[0])
                continue
            s = self.sends[0]
            self.read_to(s.at + self.late)
            self.sends.popleft()
            st = self.night.state(s.guid)
            if st.last is s:
                st.last = None  # a later call of it comes too late to be its: an error, or a reprocess run's
            yield s

    def of_run(self, op: OpLine) -> list[AccountLine]:
        """The calls a reprocess run sent (read up to the next run, or REPROCESS_S past it)."""
        self.read_to(self.until[id(op)])
        return calls_of(op)

    def _read(self, r: OpLine | ChannelLine | AccountLine) -> None:
        if type(r) is ChannelLine:
            st = self.night.state(r.guid, r.at)
            st.last, st.last_at = r, r.at
            self.sends.append(r)
            return
        if type(r) is OpLine:
            if r.command == "reprocess":
                self.last_reprocess = r
            return
        assert type(r) is AccountLine
        st = self.night.state(r.guid)
        st.seen += 1
        r.n = st.seen
        cause = self._cause(r, st)
        if cause.calls is None:
            cause.calls = r  # most sends cause one call: no list for it
        elif type(cause.calls) is AccountLine:
            cause.calls = [cause.calls, r]
        else:
            cause.calls.append(r)

    def _cause(self, r: AccountLine, st: GuidState) -> ChannelLine | OpLine:
        run = self.last_reprocess
        if st.last_at is not None and (run is None or st.last_at >= run.at):
            if r.at - st.last_at > self.late:
                send = st.last or self._latest_send(r)  # a send handed on to the walk is read again
                raise BundleError(
                    f"GUID {r.guid} reaches the account system {r.at - st.last_at:.1f} s after its latest "
                    f"send ({send.where}), and no reprocess run came in between: one call far from the "
                    "rest",
                    where=f"{self.bundle.folder / r.file}, line {r.line}",
                    fix="correct this line's time (a wrong date, zone or unit?); if "
                    "a batch run sent it, add that run to the operations log",
                )
            assert st.last is not None, f"{r.guid}: its latest send was handed on within {self.late:g} s of it"
            return st.last
        if run is None:
            raise BundleError(
                f"GUID {r.guid} reaches the account system before anything sent it",
                where=f"{self.bundle.folder / r.file}, line {r.line}",
                fix="check the times of this line and of the channel's sends of it (a zone? a unit?)",
            )
        if r.at - run.at > REPROCESS_S and (st.last_at is None or st.last_at < run.at):
            raise BundleError(
                f"GUID {r.guid} reaches the account system {r.at - run.at:.1f} s after the reprocess run of "
                f"{run.where}, with no send of it in between: more than {REPROCESS_S:g} s after a run started",
                where=f"{self.bundle.folder / r.file}, line {r.line}",
                fix="correct this line's time (a wrong date, zone or unit?), or add the run that sent it to the "
                "operations log",
            )
        return run

    def _latest_send(self, r: AccountLine) -> ChannelLine:
        """The GUID's latest send before the call, read again (on the way to an error)."""
        latest = None
        for s in self.bundle.channel:
            if s.at > r.at:
                break
            if s.guid == r.guid:
                latest = s
        assert latest is not None, f"{r.guid}: a send was read, and cannot be found again"
        return latest


def calls_of(cause: ChannelLine | OpLine) -> list[AccountLine]:
    """The account calls a send or a reprocess run caused (Causes)."""
    calls = cause.calls
    return [] if calls is None else [calls] if type(calls) is AccountLine else calls
