"""The account system's clock against the channel's: the offset to add to every account time, and why.

    offset, note = clock_offset(bundle, census.gaps, given=None)      # census: guids.take_census(bundle)

If the account system stamped a GUID's first call before the channel first sent it, the
clocks disagree: the offset is the smallest shift that puts every first call after its
send, plus 1 ms. Logs merged from several pods are sorted first (bundle.py), so the first
send is the first in time, not the first in a file. A single call that would need a shift
of more than FAR_S while the others need little is one call far from the rest: more
likely a wrong time than a clock, so it is an error naming that line (give
--account-clock-offset to say the clock really was that far off).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relaychaos.incidents.mapping import BundleError

if TYPE_CHECKING:
    from relaychaos.incidents.bundle import Bundle
    from relaychaos.incidents.guids import Gap

FAR_S = 30.0


def clock_offset(bundle: Bundle, gaps: list[Gap], given: float | None) -> tuple[float, str | None]:
    """(seconds to add to every account time, the sentence saying why) -- see the module doc. `gaps`: (call
    time − send time, call, send) of the two GUIDs whose first call came soonest after (or furthest before)
    their first send, smallest first (guids.take_census)."""
    if given is not None:
        if gaps and gaps[0][0] + given < 0:
            d, a, c = gaps[0]
            raise BundleError(
                f"with --account-clock-offset {given:g}, GUID {a.guid} still reaches the account "
                f"system {-(d + given):.3f} s before the channel sent it ({c.where})",
                where=f"{bundle.folder / a.file}, line {a.line}",
                fix=f"use an offset of at least {-d:.3f}, or leave the option out to have it estimated",
            )
        return given, (f"account times moved by {given:+.3f} s (--account-clock-offset)" if given else None)
    if not gaps or gaps[0][0] >= 0:
        return 0.0, None
    d, a, c = gaps[0]
    rest = -gaps[1][0] if len(gaps) > 1 else 0.0
    if -d > FAR_S and -d > 10 * max(rest, 0.1):
        raise BundleError(
            f"GUID {a.guid} reaches the account system {-d:.3f} s before the channel sent it "
            f"({c.where}), while every other call needs a shift of at most {max(rest, 0):.3f} s: one "
            "call far from the rest",
            where=f"{bundle.folder / a.file}, line {a.line}",
            fix="correct this line's time (a wrong date or unit?), or, if the account system's clock "
            f"really was {-d:.1f} s behind, say so with --account-clock-offset {-d + 0.001:.3f}",
        )
    offset = round(-d + 0.001, 3)
    return offset, (
        f"the clocks disagree: the account system stamped GUID {a.guid} ({a.where}) {-d:.3f} s "
        f"before the channel sent it ({c.where}); its clock is taken to be {offset:.3f} s behind the "
        f"channel's, and every account time is moved by +{offset:.3f} s"
    )


def shift(bundle: Bundle, offset: float) -> None:
    """Put the account log's times on the channel's clock: every later pass over it reads them moved."""
    bundle.account.offset = offset
