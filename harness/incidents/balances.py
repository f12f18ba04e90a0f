"""Opening balances for the replay: given in incident.toml, or inferred from what the account system answered.

    accounts, notes = opening(bundle)

Inferred, from the account log's calls sorted by party and then by time (spill.Runs: a night's
million accounts are on disk, one party's calls in memory at a time): every applied debit (`0000`)
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
from collections.abc import Iterator
from typing import TYPE_CHECKING

from relaychaos.incidents.spill import Runs

if TYPE_CHECKING:
    from relaychaos.incidents.bundle import Bundle

# what a row says of its party, in the order a party's rows of one call are taken
DEBIT, CREDIT, SHORT, UNKNOWN, KNOWN, NAMED = range(6)


class Opened:
    """Opening balances in the order of the parties' names, kept as spill.Runs (a night may open a million
    accounts): `items()` reads them, as often as needed."""

    def __init__(self) -> None:
        self.rows = Runs()

    def __len__(self) -> int:
        return len(self.rows)

    def items(self) -> Iterator[tuple[str, int]]:
        return iter(self.rows)  # (party, balance) rows


Accounts = dict[str, int] | Opened


class Parties:
    """What each call and send says of each party, as the census (guids.py) reads each GUID's records: rows sorted
    by party, then by the call's place in the account log. Every party the channel named is in them: a call's
    parties are its GUID's first send's (the census checks it), and a send no call matches names its own."""

    def __init__(self) -> None:
        self.rows = Runs()

    def call(self, n: int, code: str, src: str, dst: str, amount: int, where: str) -> None:
        """The account log's call number n (in its order)."""
        add = self.rows.add
        if code == "0000":
            add((src, n, DEBIT, amount))
            add((dst, n, CREDIT, amount))
        elif code == "B201":
            add((src, n, SHORT, amount, where))
            add((dst, n, KNOWN, 0))
        elif code == "B202":
            add((src, n, UNKNOWN, 0))
            add((dst, n, UNKNOWN, 0))
        else:
            add((src, n, KNOWN, 0))
            add((dst, n, KNOWN, 0))

    def named(self, src: str, dst: str) -> None:
        """A send's parties, named by the channel."""
        self.rows.add((src, math.inf, NAMED, 0))
        self.rows.add((dst, math.inf, NAMED, 0))


def opening(bundle: Bundle, parties: Parties) -> tuple[Accounts, list[str]]:
    """(party -> opening balance, notes) -- see the module doc."""
    given = bundle.meta.get("accounts")
    if given:
        return {str(k): int(v) for k, v in given.items()}, []
    out, notes, unknown = Opened(), [], []
    party: str | None = None
    parties.rows.close()
    rows = iter(parties.rows)
    row = next(rows, None)
    while row is not None:
        party = row[0]
        net = need = largest = 0
        moved = known = refused = False
        upper: tuple[float, int, str] = (math.inf, 0, "")  # the upper bound, and the B201 line's amount and place
        while row is not None and row[0] == party:
            kind, amount = row[2], row[3]
            if kind == DEBIT:
                need = max(need, amount - net)
                net -= amount
                largest = max(largest, amount)
                moved = True
            elif kind == CREDIT:
                net += amount
                moved = True
            elif kind == SHORT:
                if amount - net - 1 < upper[0]:
                    upper = (amount - net - 1, amount, row[4])
                known = True
            elif kind == UNKNOWN:
                refused = True
            elif kind == KNOWN:
                known = True
            row = next(rows, None)
        if not moved and not known and refused:
            unknown.append(party)
            continue
        high, amount, where = upper
        if high == math.inf:
            out.rows.add((party, need + largest))
        elif high < need:
            notes.append(
                f"opening balance of {party}: the account log applied debits that need at least {need} but "
                f"refused {amount} as insufficient funds ({where}), which needs less than "
                f"{int(high) + 1}: the replay opens it at {need}, and that refusal will differ; fix: "
                "check the log, or set the balances in incident.toml [accounts]"
            )
            out.rows.add((party, need))
        else:
            out.rows.add((party, int(need + (high - need) // 2)))
    out.rows.close()
    head = f"opening balances inferred from the account log ({len(out)} accounts; incident.toml [accounts] sets them)"
    if unknown:
        head += f"; not opened, as the account system did not know them (B202): {', '.join(unknown)}"
    return out, [head] + notes
