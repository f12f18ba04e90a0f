"""Random literal histories, drawn from a seed: many GUIDs' sends, account calls, faults, batches and snapshots.

    history = random_history(7)     # the same history for the same seed

Times are coarse (one to three decimals), so events often share a moment: the ties
where "at t" and "from t0 to t1" are easiest to get wrong. Not realistic runs: every
rule gets something to judge, and many verdicts come out.
"""

from __future__ import annotations

import random

from relaychaos.history import History

from .history_builder import HistoryBuilder, row

TOXICS = ("timeout", "latency", "limit_data", "reset_peer")
RAW = ('{{"guid": "{g}", "from": "a"}}', "nope", '{{"guid": "{g}", "from": "alice", "to": "bob", "amount": 1, "x": 1}}')


def _sends(h: HistoryBuilder, r: random.Random, guids: list[str], t) -> None:
    for _ in range(r.randint(1, 25)):
        g, at = r.choice(guids), t()
        end = at + r.choice([0.0, 0.01, 0.05, 0.2, 0.5, 2.0])
        how = r.random()
        if how < 0.08:
            h.send(g, at=at, raw=r.choice(RAW).format(g=g), code=r.choice(["E400", "0000"]))
        elif how < 0.2:
            h.send(
                g, at=at, answered_at=None, gave_up_at=end, amount=r.choice([1, 1, 2]), intent=r.choice([None, "p1"])
            )
        else:
            h.send(
                g,
                at=at,
                answered_at=end,
                code=r.choice(["0000", "0000", "E903", "E901", "E902", "B201", "E904"]),
                amount=r.choice([1, 1, 2]),
                sent_at=r.choice([None, at + 0.01]),
                retransmits=r.choice([0, 0, 2]),
                intent=r.choice([None, "p1"]),
            )
        if r.random() < 0.5:
            h.account_call(
                g,
                received_at=at + r.choice([0.0, 0.01, 0.3]),
                code=r.choice(["0000", "B201", None]),
                ledger_status=r.choice(["SENT", "SENT", None]),
            )


def _rows(r: random.Random, guids: list[str], updated_at: float, statuses: list[str]) -> dict:
    return {
        g: row(
            r.choice(statuses),
            r.choice(["0000", "B201"]),
            updated_at=updated_at - r.uniform(0, 2),
            attempts=r.randint(1, 5),
        )
        for g in guids
        if r.random() < 0.75
    }


def _faults(h: HistoryBuilder, r: random.Random, guids: list[str], t) -> None:
    for _ in range(r.randint(0, 6)):
        at, proxy, what = t(), r.choice(["account", "hub-a", "hub-b"]), r.random()
        if what < 0.3:
            name = h.toxic(
                proxy,
                r.choice(TOXICS),
                at,
                stream=r.choice(["downstream", "upstream"]),
                attributes={"latency": r.choice([10, 1000])},
            )
            if r.random() < 0.5:
                h.remove_toxic(proxy, name, at + r.uniform(0, 1))
        elif what < 0.45:
            h.disable(proxy, at)
            h.enable(proxy, at + r.uniform(0, 1))
        elif what < 0.55:
            h.kill("a", at)
            h.start("a", at + 0.1)
        elif what < 0.65:
            h.heal(at)
        elif what < 0.75:
            h.server_fault(at, hold_guids=[r.choice(guids)], delay_ms=r.choice([0, 500]))
        else:
            command, statuses = r.choice(["resolve", "reprocess", "purge"]), ["SENT", "UNKNOWN", "DONE", "FAILED"]
            h.snapshot(_rows(r, guids, at, statuses), at=at - 0.01)
            h.batch(command, r.choice([0, 1, 3]), at, at + r.uniform(0, 1), returncode=r.choice([0, 0, 1, None]))
            h.snapshot(_rows(r, guids, at, statuses), at=at + 1.1, kind=command)


def random_history(seed: int) -> History:
    """One random history; the same for the same seed."""
    r = random.Random(seed)
    h = HistoryBuilder(account_timeout_ms=r.choice([100, 300]), accounts={"alice": 100, "bob": 0})
    guids = [f"g{i}" for i in range(r.randint(1, 6))]

    def t() -> float:
        return round(r.uniform(0, 3), r.choice([1, 2, 3]))

    _sends(h, r, guids, t)
    _faults(h, r, guids, t)
    if r.random() < 0.7:
        h.snapshot(_rows(r, guids, 4.0, ["DONE", "FAILED", "UNKNOWN"]), at=4.0)
    return h.build()
