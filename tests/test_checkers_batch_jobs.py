"""Every batch job's rule proved on literal histories: purge --retention, resolve --min-age, resolve leaving a row
whose query cannot be answered, reprocess --max-attempts; each where it holds, where it breaks, at its boundary.

See literal_support.py for `@holds` / `@breaks` and the stories.
"""

from __future__ import annotations

import pytest

from relaychaos.checkers import check
from relaychaos.checkers.facts import Facts
from relaychaos.history import History
from relaychaos.tolerances import CURRENT, V1

from .history_builder import row
from .literal_support import (
    CAP,
    EPS,
    MIN_AGE,
    RETENTION,
    TOL,
    breaks,
    e901_lost_answer,
    holds,
    paid,
    reprocessed,
    story,
)


# purge --retention RETENTION on a DONE row updated at wall time 0.0
def purged(*, start_wall: float, end_wall: float, deleted: bool, tolerances=CURRENT) -> History:
    h = story(tolerances=tolerances)
    paid(h, at=-0.05, answered_at=0.0)
    done = {"g1": row("DONE", "0000", updated_at=0.0)}
    h.snapshot(done, at=0.01)
    h.batch("purge", RETENTION, start=start_wall, end=end_wall)
    h.snapshot({} if deleted else done, at=end_wall + 0.01, kind="purge")
    return h.build()


@holds("purge-retention", "transitions")
def test_purge_deleting_a_done_row_exactly_retention_less_clock_slack_old_holds():
    end = RETENTION - TOL.clock_slack_s
    return purged(start_wall=end - 0.1, end_wall=end, deleted=True)


@breaks("purge-retention", "g1")
def test_purge_deleting_a_done_row_just_younger_than_retention_less_clock_slack_breaks():
    end = RETENTION - TOL.clock_slack_s - EPS
    return purged(start_wall=end - 0.1, end_wall=end, deleted=True)


@holds("purge-retention")
def test_purge_keeping_a_done_row_just_younger_than_retention_plus_slack_holds():
    start = RETENTION + TOL.retention_slack_s - EPS
    return purged(start_wall=start, end_wall=start + 0.1, deleted=False)


@breaks("purge-retention", "g1")
def test_purge_keeping_a_done_row_exactly_retention_plus_slack_old_when_it_starts_breaks():
    start = RETENTION + TOL.retention_slack_s
    return purged(start_wall=start, end_wall=start + 0.1, deleted=False)


def test_a_history_recorded_without_tolerances_is_judged_by_v1():
    old = purged(start_wall=100.0, end_wall=100.1, deleted=False, tolerances=None)
    assert "tolerances" not in Facts(old).scenario
    assert Facts(old).tolerances == V1
    assert check(old) == [], "V1 never required purge to delete (retention_slack_s = inf)"
    assert "purge-retention" in {v.rule for v in check(purged(start_wall=100.0, end_wall=100.1, deleted=False))}


# resolve --min-age on an UNKNOWN row updated at wall time 0.0; the run lasts from 0.75 × end to end
def resolved(
    *,
    end: float,
    min_age: float = MIN_AGE,
    settled: str = "DONE",
    down: str | None = None,
    down_until: float | None = None,
    then_resolved: bool = False,
) -> History:
    h = story()
    e901_lost_answer(h, at=0.0)
    unknown = {"g1": row("UNKNOWN", "E901", updated_at=0.0)}
    h.snapshot(unknown, at=end * 0.1)
    h.heal(at=end * 0.2)
    if down == "disabled":
        h.disable("account", at=end * 0.3)
    elif down == "timeout":
        h.toxic("account", "timeout", at=end * 0.3, attributes={"timeout": 0})
    if down_until is not None:
        h.heal(at=down_until)
    h.snapshot(unknown, at=end * 0.5, kind="disable_proxy" if down else "heal")
    h.batch("resolve", min_age, start=end * 0.75, end=end)
    after = {
        "DONE": row("DONE", "0000", updated_at=end * 0.9),
        "FAILED": row("FAILED", "E901", updated_at=end * 0.9),
        "UNKNOWN": unknown["g1"],
    }[settled]
    h.snapshot({"g1": after}, at=end + 0.01, kind="resolve")
    if then_resolved:
        h.heal(at=end + 0.1)
        h.snapshot({"g1": after}, at=end + 0.15, kind="heal")
        h.batch("resolve", min_age, start=end + 0.2, end=end + 0.3)
        h.snapshot({"g1": row("DONE", "0000", updated_at=end + 0.25)}, at=end + 0.35, kind="resolve")
    return h.build()


@holds("resolve-min-age", "resolve-keeps-unanswered", "transitions", "ledger-agrees", "batch-runs")
def test_resolve_settling_an_unknown_row_exactly_min_age_less_clock_slack_old_holds():
    return resolved(end=MIN_AGE - TOL.clock_slack_s)


@breaks("resolve-min-age", "g1")
def test_resolve_settling_an_unknown_row_just_younger_than_min_age_less_clock_slack_breaks():
    return resolved(end=MIN_AGE - TOL.clock_slack_s - EPS)


@holds("resolve-min-age")
def test_resolve_leaving_a_young_unknown_row_alone_holds():
    return resolved(end=MIN_AGE / 2, settled="UNKNOWN", then_resolved=True)


@pytest.mark.parametrize("down", ["disabled", "timeout"])
@breaks("resolve-keeps-unanswered", "g1")
def test_resolve_moving_an_unknown_row_to_failed_while_its_query_cannot_answer_breaks(down):
    return resolved(end=2.0, settled="FAILED", down=down)


@pytest.mark.parametrize("down", ["disabled", "timeout"])
@holds("resolve-keeps-unanswered")
def test_resolve_leaving_an_unknown_row_while_its_query_cannot_answer_holds(down):
    return resolved(end=2.0, settled="UNKNOWN", down=down, then_resolved=True)


@holds("resolve-keeps-unanswered", alone=True)
def test_resolve_settling_a_row_once_the_account_proxy_came_back_during_the_run_is_not_judged_by_it():
    return resolved(end=2.0, settled="FAILED", down="disabled", down_until=1.6)


# reprocess --max-attempts CAP of a FAILED row tried `attempts` times (every try refused: E902)
@holds("attempt-cap", "guid-preserved", "write-before-send", "transitions")
def test_reprocess_retrying_a_row_tried_one_time_fewer_than_the_cap_holds():
    return reprocessed(CAP - 1)


@breaks("attempt-cap", "g1")
def test_reprocess_retrying_a_row_already_tried_as_often_as_the_cap_breaks():
    return reprocessed(CAP)


@holds("attempt-cap")
def test_a_channel_resend_during_reprocess_may_raise_attempts_past_the_cap():
    return reprocessed(CAP, channel_resend_at=2.05)
