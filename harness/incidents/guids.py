"""The night's GUIDs, one GuidState each, and what the logs say of them that cannot be right.

    night, gaps = index(bundle)        # guid -> GuidState (label, first send's time, calls, debits); clock gaps

One pass over the channel log gives each GUID its label (`g1`, `g2`, ... in the order the
channel first sent them) and its first send's time and request (a hash: a message citing the
send reads it again, first_sends); one pass over the account log its calls and debits, and
the two GUIDs whose first call came
soonest after their first send (or furthest before it: clocks.py reads the clocks' offset
from them).
Errors (a scenario built on them would be a different night), each naming the file and
line: a GUID the account system received that the channel never sent (said when it
differs only in case from one it sent); an account call whose amount or parties differ
from the channel's request for that GUID; a channel `0000` for a GUID the account system has
no call for. Warnings, in bundle.notes: GUIDs that differ
only in case (the relay takes them as two, and so does the import).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from relaychaos.incidents.mapping import BundleError
from relaychaos.incidents.records import AccountLine, ChannelLine

if TYPE_CHECKING:
    from relaychaos.incidents.bundle import Bundle

Gap = tuple[float, AccountLine, ChannelLine]  # (first call's time - first send's, the call, the send) of a GUID


@dataclass(slots=True)
class GuidState:
    number: int  # its label's number: g1, g2, ... in the order the channel first sent them
    first_at: float  # its first send's time
    request: int  # a hash of its first send's amount and parties (an account call that differs is an error)
    last: ChannelLine | None = None  # its latest send, while the walk's window holds it (reconstruct.Causes)
    last_at: float | None = None  # its latest send's time, once read
    calls: int = 0
    debits: int = 0
    seen: int = 0  # its calls the walk has put down to their causes so far (each call's n)

    @property
    def label(self) -> str:
        return f"g{self.number}"


def _where(bundle: Bundle, r: ChannelLine | AccountLine) -> str:
    return f"{bundle.folder / r.file}, line {r.line}"


def first_sends(bundle: Bundle, wanted: set[str]) -> dict[str, ChannelLine]:
    """The first send of each GUID wanted, from a pass over the channel log (the night's records are not kept: a
    message that cites a first send reads it again)."""
    out: dict[str, ChannelLine] = {}
    for r in bundle.channel:
        if r.guid in wanted and r.guid not in out:
            out[r.guid] = r
            if len(out) == len(wanted):
                break
    return out


def index(bundle: Bundle) -> tuple[dict[str, GuidState], list[Gap]]:
    """Every GUID of the night, and the clock gaps (see the module doc)."""
    night: dict[str, GuidState] = {}
    folded: dict[str, str] = {}
    twins: list[tuple[ChannelLine, str]] = []  # a GUID differing only in case from one sent before it
    for r in bundle.channel:
        st = night.get(r.guid)
        if st is None:
            night[r.guid] = GuidState(len(night) + 1, r.at, hash((r.amount, r.src, r.dst)))
            key = r.guid if r.guid.islower() or not any(c.isupper() for c in r.guid) else r.guid.lower()
            other = folded.setdefault(key, r.guid)
            if other != r.guid:
                twins.append((r, other))
    del folded
    if twins:
        sent = first_sends(bundle, {other for _, other in twins})
        bundle.notes += [
            f"{_where(bundle, r)}: GUID {r.guid} differs only in case from {other} ({sent[other].where}): they are "
            'taken as two GUIDs, as a relay takes them; if one system changed the case, set guid_case = "lower" for '
            "that log in incident.toml"
            for r, other in twins
        ]
    gaps: list[tuple[float, int, int, AccountLine]] = []  # a max-heap of the two smallest gaps, with a tie-break
    for c in bundle.account:
        st = night.get(c.guid)
        if st is None:
            _never_sent(c, _where(bundle, c), night, bundle)
        if hash((c.amount, c.src, c.dst)) != st.request:
            _differs(c, first_sends(bundle, {c.guid})[c.guid], _where(bundle, c))
        st.calls += 1
        st.debits += c.code == "0000"
        if st.calls == 1:
            entry = (st.first_at - c.at, -c.line, id(c), c)
            if len(gaps) < 2:
                heapq.heappush(gaps, entry)
            elif entry[0] > gaps[0][0]:
                heapq.heapreplace(gaps, entry)
    _unanswered_ok(bundle, night)
    sent = first_sends(bundle, {c.guid for *_, c in gaps})
    return night, sorted(((-g, c, sent[c.guid]) for g, _, _, c in gaps), key=lambda x: (x[0], x[1].line))


def _differs(c: AccountLine, send: ChannelLine, where: str) -> NoReturn:
    raise BundleError(
        f"GUID {c.guid}: the account system received {c.amount} {c.src}→{c.dst}, the channel "
        f"sent {send.amount} {send.src}→{send.dst} ({send.where})",
        where=where,
        fix="the logs disagree on the transfer: check both lines (a unit? a GUID reused?) and "
        "correct the one that is wrong",
    )


def _never_sent(c: AccountLine, where: str, night: dict[str, GuidState], bundle: Bundle) -> NoReturn:
    lower = c.guid.lower()
    other = next((g for g in night if g.lower() == lower), None)  # only on the way to an error
    if other is not None:
        sent = first_sends(bundle, {other})[other]
        raise BundleError(
            f"GUID {c.guid} is not in the channel log, but {other} ({sent.where}) differs from it only in case",
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


def _unanswered_ok(bundle: Bundle, night: dict[str, GuidState]) -> None:
    """A channel `0000` for a GUID the account system has no call for: the account log is incomplete."""
    for r in bundle.channel:
        if r.result == "0000" and night[r.guid].calls == 0:
            raise BundleError(
                f"the relay answered 0000 for GUID {r.guid}, but the account log has no call for it",
                where=_where(bundle, r),
                fix="the account log is incomplete (add the call), or this line's GUID or result is wrong",
            )
