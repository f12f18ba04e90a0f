"""benchmarks.where_time_goes: the split of a run's worker-seconds, on a hand-written history (no process)."""

from __future__ import annotations

import pytest

from benchmarks.where_time_goes import TimedTest, split
from relaychaos.events import Event


def ev(t: float, process: str, type_: str, f: str, **value: object) -> Event:
    return Event(0, t, process, type_, f, dict(value))


# A test of 10 s whose history spans 0-8 s:
#   0-1   serve starts (relay-a)
#   1-3   latency toxic on the account proxy; a background send runs inside it (not counted twice)
#   2-2.5 a second relay starts inside the toxic: a start, not a wait
#   3-4   wait_calls step
#   4-5   account system holds g1; released at 5
#   5-6   age wait (the final phase's min-age)
#   6-7   resolve (a batch command)
#   7-8   the rest: snapshots, checks
HISTORY = (
    ev(0.0, "relay-a", "invoke", "start", slot="a"),
    ev(1.0, "relay-a", "ok", "start", slot="a"),
    ev(1.0, "nemesis", "invoke", "add-toxic", proxy="account", toxic="slow", kind="latency"),
    ev(1.0, "nemesis", "ok", "add-toxic", proxy="account", toxic="slow"),
    ev(1.5, "channel-a-0-0", "invoke", "transfer", guid="g1"),
    ev(2.0, "relay-b", "invoke", "start", slot="b"),
    ev(2.5, "relay-b", "ok", "start", slot="b"),
    ev(2.9, "channel-a-0-0", "ok", "transfer", guid="g1"),
    ev(3.0, "nemesis", "ok", "remove-toxic", proxy="account", toxic="slow"),
    ev(3.0, "runner", "invoke", "step", n=3, step="wait_calls guid=g1"),
    ev(3.9, "runner", "ok", "wait-calls", guid="g1", calls=1, wanted=1),
    ev(4.0, "runner", "ok", "step", n=3),
    ev(4.0, "nemesis", "ok", "server-fault", hold_guids=["g1"], e500_guids=[]),
    ev(5.0, "nemesis", "ok", "release", guids=["g1"]),
    ev(5.0, "runner", "ok", "age", seconds=1.0, min_age_s=1.5),
    ev(6.0, "batch-1", "invoke", "resolve", run=1, command="resolve"),
    ev(7.0, "batch-1", "ok", "resolve", run=1, command="resolve", duration_s=1.0),
    ev(8.0, "observer", "ok", "account-stats"),
)


def test_split_of_a_small_history() -> None:
    tests = [TimedTest(10.0, (HISTORY,)), TimedTest(3.0)]  # the second test recorded no history: all rest
    got = split(tests, worker_seconds=2 * 10.0)
    assert got.starts == pytest.approx(1.0 + 0.5 + 1.0)
    assert got.waits == pytest.approx(1.5 + 1.0 + 1.0 + 1.0)  # toxic less the start inside it, wait, hold, age
    assert got.rest == pytest.approx(1.0 + 2.0 + 3.0)  # in the history, outside it, the second test
    assert got.rest_outside == pytest.approx(2.0 + 3.0)
    assert got.setup == pytest.approx(20.0 - 13.0)
    assert got.total == pytest.approx(20.0)


def test_waits_left_open_end_with_the_history_and_heal_closes_them() -> None:
    history = (
        ev(0.0, "runner", "invoke", "step", n=1, step="wait seconds=2.6"),
        ev(2.6, "runner", "ok", "step", n=1),
        ev(2.6, "nemesis", "invoke", "add-toxic", proxy="account", toxic="t", kind="latency"),
        ev(3.0, "nemesis", "ok", "server-fault", delay_ms=200, hold_guids=["g2"]),
        ev(4.0, "nemesis", "ok", "heal"),  # ends the toxic, the delay and the hold
        ev(5.0, "runner", "invoke", "step", n=2, step="await_sends"),
        ev(6.0, "observer", "ok", "account-stats"),  # the history ends inside await_sends
    )
    got = split([TimedTest(6.0, (history,))], worker_seconds=6.0)
    assert got.waits == pytest.approx(2.6 + 1.4 + 1.0)
    assert (got.starts, got.setup, got.rest_outside) == (0.0, 0.0, 0.0)
    assert got.rest == pytest.approx(1.0)
