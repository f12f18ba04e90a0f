"""A purge forgets a GUID (contract §5): a resend after it is the relay meeting the GUID anew.

The money rules count account calls and debits per life of a GUID's ledger row: a purge that
deleted its DONE row at least --retention old starts a new life; one that deleted it younger
starts none, and the second call breaks them as well as purge-retention.
"""

from __future__ import annotations

from relaychaos.checkers import check
from relaychaos.history import History

from .history_builder import row
from .literal_support import EPS, RETENTION, TOL, holds, paid, story


def resent_after_purge(*, end_wall: float) -> History:
    """g1 paid, its DONE row deleted by a purge ending at end_wall, then the channel resends it: paid again."""
    h = story()
    paid(h, at=-0.05, answered_at=0.0)
    h.snapshot({"g1": row("DONE", "0000", updated_at=0.0)}, at=0.01)
    h.batch("purge", RETENTION, start=end_wall - 0.1, end=end_wall)
    h.snapshot({}, at=end_wall + 0.01, kind="purge")
    paid(h, at=end_wall + 0.1, answered_at=end_wall + 0.15)
    return h.build()


@holds("one-account-call", "one-debit", "balances", "purge-retention")
def test_a_resend_after_purge_deleted_its_done_row_in_time_is_the_relay_meeting_it_anew():
    """Purge forgets a GUID (contract §5): the second call and debit are a new life of its row."""
    return resent_after_purge(end_wall=RETENTION)


def test_a_resend_after_purge_deleted_its_done_row_too_young_breaks_the_money_rules_too():
    verdicts = check(resent_after_purge(end_wall=RETENTION - TOL.clock_slack_s - EPS))
    assert {(v.rule, v.guid) for v in verdicts} >= {
        ("one-account-call", "g1"),
        ("one-debit", "g1"),
        ("purge-retention", "g1"),
    }
