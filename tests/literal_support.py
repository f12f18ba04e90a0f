"""Shared pieces of the literal-history tests: the numbers, `@holds` / `@breaks`, and small stories.

The tests themselves are tests/test_checkers_money_ledger.py, test_checkers_batch_jobs.py,
test_checkers_answers.py and test_checkers_interface.py: every checker proved on literal
histories, no processes, no Toxiproxy, no network.

Each rule of `relaychaos.checkers.RULES` has at least one history where it holds and one where it
breaks; rules judged against a tolerance or a number are tested at the boundary: at the number,
and a hair (EPS) past it. The numbers come from `relaychaos.tolerances.CURRENT`, never from here.

`@holds(rule, ...)` and `@breaks(rule, guid)` turn a function returning a History into a test:
`holds` asserts that no rule at all is broken (or, with `alone=True`, only that this one is not);
`breaks` asserts that the rule is among the verdicts, naming `guid` (None: a rule about the run).
"""

from __future__ import annotations

import functools
import json

from relaychaos.checkers import check
from relaychaos.history import History
from relaychaos.reports.incident import report
from relaychaos.tolerances import CURRENT

from .history_builder import HistoryBuilder, row

TOL = CURRENT
MS = 300  # ACCOUNT_TIMEOUT_MS of most stories
LIMIT = TOL.answer_limit_s(MS) + TOL.answer_slack_s  # what answered-in-time allows, slack included
MIN_AGE = MS / 1000 + TOL.min_age_margin_s  # the runner's safe --min-age when nothing else is injected
RETENTION = 1.0
CAP = 3
EPS = 0.001  # "just past": far above float rounding, far below any tolerance
HOLDS: set[str] = set()
BREAKS: set[str] = set()


# -- the two kinds of test -------------------------------------------------------------------------
def holds(*rule_ids: str, alone: bool = False):
    """The decorated function's history keeps every rule (alone=True: keeps these rules, others may break)."""

    def wrap(fn):
        HOLDS.update(rule_ids)

        @functools.wraps(fn)
        def test(*args, **kwargs):
            h = fn(*args, **kwargs)
            verdicts = check(h)
            broken = {v.rule for v in verdicts} & set(rule_ids) if alone else {v.rule for v in verdicts}
            assert not broken, report(h, verdicts, limit=20)

        return test

    return wrap


def breaks(rule_id: str, guid: str | None):
    """The decorated function's history breaks rule_id, with a verdict naming guid (None: the run)."""

    def wrap(fn):
        BREAKS.add(rule_id)

        @functools.wraps(fn)
        def test(*args, **kwargs):
            h = fn(*args, **kwargs)
            verdicts = check(h)
            mine = [v for v in verdicts if v.rule == rule_id]
            assert mine, f"{rule_id} held; verdicts: {report(h, verdicts, limit=20)}"
            assert guid in {v.guid for v in mine}, report(h, mine)

        return test

    return wrap


# -- stories ---------------------------------------------------------------------------------------
def story(ms: int = MS, **kw) -> HistoryBuilder:
    return HistoryBuilder(account_timeout_ms=ms, accounts={"alice": 100, "bob": 0}, **kw)


def paid(h: HistoryBuilder, guid: str = "g1", at: float = 0.0, answered_at: float = 0.05, **send) -> None:
    """A send answered 0000, with its one applied account call while the relay waits."""
    h.send(guid, at=at, answered_at=answered_at, **send)
    begin = send.get("sent_at", at)
    h.account_call(guid, received_at=begin + (answered_at - begin) / 3, answered_at=begin + (answered_at - begin) / 2)


def one_paid_transfer(guid: str = "g1") -> HistoryBuilder:
    h = story()
    paid(h, guid)
    h.snapshot({guid: row("DONE", "0000", updated_at=0.05)}, at=0.1)
    return h


def e901_lost_answer(h: HistoryBuilder, guid: str = "g1", at: float = 0.0) -> None:
    """An account timeout toxic: the call is applied but its answer lost; E901 at `at`, the row UNKNOWN."""
    h.toxic("account", "timeout", at=at - 0.4, attributes={"timeout": 0})
    h.send(guid, at=at - 0.35, answered_at=at, code="E901")
    h.account_call(guid, at - 0.34, at - 0.33)


AMOUNT_ZERO = json.dumps({"guid": "m1", "from": "alice", "to": "bob", "amount": 0})
EXTRA = json.dumps({"guid": "x1", "from": "alice", "to": "bob", "amount": 1, "extra": 1})


def reprocessed(attempts: int, *, channel_resend_at: float | None = None) -> History:
    h = story()
    h.disable("account", at=0.0)
    for n in range(attempts):
        h.send("g1", at=0.1 + 0.1 * n, answered_at=0.11 + 0.1 * n, code="E902", attempt=n + 1)
    h.enable("account", at=0.9)
    h.snapshot({"g1": row("FAILED", "E902", attempts=attempts, updated_at=0.8)}, at=1.0, kind="enable_proxy")
    h.batch("reprocess", CAP, start=2.0, end=2.2)
    if channel_resend_at is None:
        h.account_call("g1", 2.05, 2.1)
    else:
        paid(h, "g1", at=channel_resend_at, answered_at=2.15)
    h.snapshot({"g1": row("DONE", "0000", attempts=attempts + 1, updated_at=2.1)}, at=2.3, kind="reprocess")
    return h.build()
