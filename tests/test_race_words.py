"""What a race decides is in a verdict's details, never in its words: a regrade reads the same.

Thirty-two copies of one GUID sent at once to a relay that checks, then inserts: how many get
past the check before the first insert commits is the race's, and differs from run to run (18 of
32 in one regrade, 32 of 32 in the next, at 0.5 CPU). The verdicts' summaries, and the incident
report's words outside its timeline, say what broke; the counts are in `details` and the
timeline lists every call.
"""

from __future__ import annotations

import pytest

from relaychaos.checkers import check
from relaychaos.reports import gradescope
from relaychaos.reports.incident import TIMELINE_LINE, report

from .literal_support import story


def raced(copies: int, row_found: str | None = None):
    """g1 sent `copies` times at once; every copy past the relay's check reached the account system."""
    h = story()
    for n in range(copies):
        h.send("g1", at=0.0, answered_at=0.5 + n / 1000)
    for n in range(copies):
        h.account_call("g1", 0.01 + n / 1000, 0.02 + n / 1000, ledger_status=row_found if n else None)
    return h.build()


def words(verdicts) -> list[tuple]:
    return [(v.rule, v.guid, v.summary, v.clause) for v in verdicts]


@pytest.mark.parametrize("copies", [18, 32])
def test_how_many_copies_got_through_changes_no_verdict_summary(copies):
    assert words(check(raced(copies))) == words(check(raced(2)))


def test_the_counts_are_in_the_details():
    by_rule = {v.rule: v for v in check(raced(18))}
    assert by_rule["one-account-call"].details == {"calls": 18, "answers": ["0000"] * 18}
    assert by_rule["one-debit"].details == {"debits": 18}
    moved = {"alice": {"expected": 100 - 1, "actual": 100 - 18}, "bob": {"expected": 1, "actual": 18}}
    assert by_rule["balances"].details == {"balances": moved}, "each copy moved the story's amount of 1"
    assert by_rule["balances"].summary.endswith("debited more than once or under a GUID the channel never sent: g1")


def test_write_before_send_is_one_verdict_per_guid_naming_every_early_call():
    """Whether a late copy found the row missing or already DONE is the race's too: the timeline says it."""
    for found in (None, "DONE"):
        early = [v for v in check(raced(16, row_found=found)) if v.rule == "write-before-send"]
        assert len(early) == 1 and len(early[0].calls) == 16
        assert early[0].details == {"ledger_rows": ["missing"] + [found or "missing"] * 15}


def test_the_incident_report_differs_only_in_its_timeline():
    def outside_timeline(copies: int) -> list[str]:
        h = raced(copies)
        text = gradescope.cut(report(h, check(h), limit=20))
        return [line for line in text.splitlines() if not TIMELINE_LINE.match(line)]

    assert outside_timeline(18) == outside_timeline(32)
