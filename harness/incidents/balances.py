"""Opening balances for the replay: given in incident.toml, or inferred from what the account system answered.

    accounts, notes = opening(bundle)

Inferred, in one pass over the account log in time order: every applied debit (`0000`)
needs the payer's opening balance to cover it after what came in and went out before it
(a lower bound); every `B201` (insufficient funds) says the opening balance was below the
amount at that moment (an upper bound). A party with an upper bound opens halfway between
its bounds, so the replay refuses and applies what production did; one without opens at
its lower bound plus its largest debit. A party only ever named in `B202` (unknown
account) calls is not opened at all. Bounds that contradict each other are a note naming
the line, never a silent change.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from relaychaos.incidents.records import AccountLine

if TYPE_CHECKING:
    from relaychaos.incidents.bundle import Bundle


def opening(bundle: Bundle) -> tuple[dict[str, int], list[str]]:
    """(party -> opening balance, notes) -- see the module doc."""
    given = bundle.meta.get("accounts")
    if given:
        return {str(k): int(v) for k, v in given.items()}, []
    net: dict[str, int] = {}
    need: dict[str, int] = {}
    upper: dict[str, tuple[float, AccountLine]] = {}  # party -> (upper bound, the B201 line)
    largest: dict[str, int] = {}
    # the parties of calls other than applied debits (those are in net) the account system knew: few, as are B202's
    known: set[str] = set()
    refused_unknown: set[str] = set()
    for c in bundle.account:
        if c.code == "0000":
            before = net.get(c.src, 0)
            need[c.src] = max(need.get(c.src, 0), c.amount - before)
            net[c.src] = before - c.amount
            net[c.dst] = net.get(c.dst, 0) + c.amount
            largest[c.src] = max(largest.get(c.src, 0), c.amount)
        elif c.code == "B201":
            bound = c.amount - net.get(c.src, 0) - 1
            if bound < upper.get(c.src, (math.inf,))[0]:
                upper[c.src] = (bound, c)
            known |= {c.src, c.dst}
        elif c.code == "B202":
            refused_unknown |= {c.src, c.dst}
        else:
            known |= {c.src, c.dst}
    named: set[str] = set()  # every party the channel named (a night may name a million: one set, no copies)
    for r in bundle.channel:
        named.add(r.src)
        named.add(r.dst)
    parties = sorted(named)
    del named
    out, notes, unknown = {}, [], []
    for p in parties:
        if p not in net and p not in known and p in refused_unknown:
            unknown.append(p)
            continue
        low = need.get(p, 0)
        if p in upper:
            high, line = upper[p]
            if high < low:
                notes.append(
                    f"opening balance of {p}: the account log applied debits that need at least {low} but "
                    f"refused {line.amount} as insufficient funds ({line.where}), which needs less than "
                    f"{int(high) + 1}: the replay opens it at {low}, and that refusal will differ; fix: "
                    "check the log, or set the balances in incident.toml [accounts]"
                )
                out[p] = low
            else:
                out[p] = int(low + (high - low) // 2)
        else:
            out[p] = low + largest.get(p, 0)
    head = f"opening balances inferred from the account log ({len(out)} accounts; incident.toml [accounts] sets them)"
    if unknown:
        head += f"; not opened, as the account system did not know them (B202): {', '.join(unknown)}"
    return out, [head] + notes
