"""Every answer rule proved on literal histories, the rule book complete, and regressions.

See literal_support.py for `@holds` / `@breaks` and the stories.
"""

from __future__ import annotations

import json

import pytest

from relaychaos.checkers import RULES, check, notes
from relaychaos.history import History

from .history_builder import row
from .literal_support import (
    AMOUNT_ZERO,
    BREAKS,
    CAP,
    EPS,
    EXTRA,
    HOLDS,
    LIMIT,
    MS,
    TOL,
    breaks,
    holds,
    one_paid_transfer,
    paid,
    reprocessed,
    story,
)


# -- the answers -----------------------------------------------------------------------------------
@holds("done-replay")
def test_a_resend_of_a_done_guid_answered_the_same_bytes_holds():
    h = one_paid_transfer()
    h.send("g1", at=0.2, answered_at=0.21)
    return h.build()


@breaks("done-replay", "g1")
def test_a_resend_of_a_done_guid_answered_other_bytes_breaks():
    h = one_paid_transfer()
    h.send("g1", at=0.2, answered_at=0.21, body=json.dumps({"guid": "g1", "code": "0000"}, separators=(",", ":")))
    return h.build()


def duplicated(took: float, *, code: str = "E903", first_answer: float = 1.5, ms: int = 2000) -> History:
    """g1 claimed at -0.2, its account call answering at first_answer; a duplicate written at 0.0, answered
    `took` later. ACCOUNT_TIMEOUT_MS is long, so that the GUID is certainly still SENT."""
    h = story(ms=ms)
    h.send("g1", at=-0.2, answered_at=first_answer + 0.01)
    h.account_call("g1", -0.19, first_answer)
    h.send("g1", at=0.0, answered_at=took, code=code)
    return h.build()


# "At once" is without waiting for the account call: the call answers 1.5 s after the duplicate, so an E903 the
# channel has before that did not wait, however slow the machine (a JVM at 0.5 CPU, a burst of copies queued);
# one after it waited, unless within e903_at_once_s.
@holds("e903-at-once")
def test_a_duplicate_answered_e903_within_its_share_of_the_wait_holds():
    return duplicated(TOL.e903_wait_share * 1.5)


@holds("e903-at-once")
def test_a_duplicate_answered_e903_later_than_its_share_of_the_wait_but_before_the_account_answer_holds():
    return duplicated(1.5 - EPS)


@breaks("e903-at-once", "g1")
def test_a_duplicate_answered_e903_just_after_the_account_system_answered_breaks():
    return duplicated(1.5 + EPS)


@holds("e903-at-once")
def test_a_duplicate_answered_e903_after_twice_the_least_at_once_holds_when_waiting_would_take_far_longer():
    assert 2 * TOL.e903_at_once_s < TOL.e903_wait_share * 1.5
    return duplicated(2 * TOL.e903_at_once_s)


@breaks("e903-at-once", "g1")
def test_a_duplicate_that_waited_for_the_account_system_and_got_0000_breaks():
    return duplicated(1.52, code="0000")


@holds("e903-at-once")
def test_a_duplicate_arriving_exactly_e903_window_before_the_account_answer_is_not_judged():
    return duplicated(TOL.e903_window_s + 2 * EPS, first_answer=TOL.e903_window_s)


@breaks("e903-at-once", "g1")
def test_a_duplicate_arriving_just_earlier_than_that_is_judged():
    return duplicated(TOL.e903_window_s + 2 * EPS, first_answer=TOL.e903_window_s + EPS)


def duplicate_while_held(took: float) -> History:
    """g1's call held by the harness from -0.19 until released at took + 0.15, once the duplicate written at 0.0
    had its E903 `took` later; ACCOUNT_TIMEOUT_MS 10 s (the race scenarios holding a call)."""
    h = story(ms=10000)
    h.server_fault(at=-0.3, hold_guids=["g1"])
    h.send("g1", at=-0.2, answered_at=took + 0.16)
    h.account_call("g1", -0.19, took + 0.15)
    h.send("g1", at=0.0, answered_at=took, code="E903")
    h.at(took + 0.15, lambda r: r.released(["g1"]))
    return h.build()


# A call the harness holds is released only once the duplicates are answered: what waiting would have taken is the
# relay's time-out (10 s from the claim), not the release the duplicates' own answers brought about.
@holds("e903-at-once")
def test_a_duplicate_answered_e903_while_its_call_is_held_is_judged_against_the_relays_time_out():
    return duplicate_while_held(0.45)


@breaks("e903-at-once", "g1")
def test_a_duplicate_answered_e903_while_held_later_than_its_share_of_the_time_out_breaks():
    return duplicate_while_held(TOL.e903_wait_share * (10.0 - 0.2) + EPS)


@holds("e903-at-once")
def test_a_duplicate_arriving_when_the_relay_may_have_given_up_on_the_call_is_not_judged():
    return duplicated(1.52, code="0000", ms=600)


def answered_code(
    code: str,
    *,
    fault: str | None = None,
    reused: bool = False,
    raw: str | None = None,
    answered_at: float = 0.05,
    call: bool = False,
) -> History:
    """A first send of g1 (after g0 used GUID g1 for another request, if reused) answered `code`."""
    h = story()
    if reused:
        paid(h, "g1", at=-1.0, answered_at=-0.95, amount=2)
    if fault == "account down":
        h.disable("account", at=-0.1)
    elif fault == "timeout toxic":
        h.toxic("account", "timeout", at=-0.1, attributes={"timeout": 0})
    h.send("g1", answered_at=answered_at, code=code, raw=raw)
    if call:
        h.account_call("g1", 0.01, 0.02)
    return h.build()


@pytest.mark.parametrize(
    "case",
    ["E902 while the account proxy is down", "E901 under a timeout toxic", "E904 for a GUID used for another request"],
)
@holds("answer-codes")
def test_an_answer_the_contracts_table_fixes_holds(case):
    return {
        "E902 while the account proxy is down": lambda: answered_code("E902", fault="account down"),
        "E901 under a timeout toxic": lambda: answered_code("E901", fault="timeout toxic", answered_at=0.35, call=True),
        "E904 for a GUID used for another request": lambda: answered_code("E904", reused=True),
    }[case]()


@pytest.mark.parametrize(
    "case",
    [
        "E901 with no fault anywhere",
        "0000 while the account proxy is down",
        "E902 under a timeout toxic",
        "0000 for a GUID used for another request",
        "0000 to a malformed body",
    ],
)
@breaks("answer-codes", "g1")
def test_an_answer_the_contracts_table_forbids_breaks(case):
    return {
        "E901 with no fault anywhere": lambda: answered_code("E901"),
        "0000 while the account proxy is down": lambda: answered_code("0000", fault="account down"),
        "E902 under a timeout toxic": lambda: answered_code("E902", fault="timeout toxic"),
        "0000 for a GUID used for another request": lambda: answered_code("0000", reused=True, call=True),
        "0000 to a malformed body": lambda: answered_code("0000", raw=AMOUNT_ZERO.replace("m1", "g1")),
    }[case]()


@holds("answer-codes")
def test_an_e901_after_exactly_account_timeout_ms_with_no_fault_holds():
    return answered_code("E901", answered_at=MS / 1000)


@breaks("answer-codes", "g1")
def test_an_e901_just_before_account_timeout_ms_with_no_fault_breaks():
    return answered_code("E901", answered_at=MS / 1000 - EPS)


def under_latency(latency_ms: float) -> History:
    h = story()
    h.toxic("account", "latency", at=-0.1, attributes={"latency": latency_ms})
    paid(h, "g1", at=0.0, answered_at=0.7)
    return h.build()


@holds("answer-codes")
def test_a_0000_under_an_account_latency_of_exactly_certain_timeout_factor_times_the_timeout_holds():
    return under_latency(TOL.certain_timeout_factor * MS)


@breaks("answer-codes", "g1")
def test_a_0000_under_an_account_latency_just_above_it_breaks():
    return under_latency(TOL.certain_timeout_factor * MS + 1)


def under_processing_delay(delay_ms: float) -> History:
    h = story()
    h.server_fault(at=-0.1, delay_ms=delay_ms)
    h.send("g1", answered_at=0.1, code="E901")
    return h.build()


@breaks("answer-codes", "g1")
def test_an_e901_under_a_processing_delay_of_exactly_disturbing_delay_factor_times_the_timeout_breaks():
    return under_processing_delay(TOL.disturbing_delay_factor * MS)


@holds("answer-codes")
def test_an_e901_under_a_processing_delay_just_above_it_holds():
    return under_processing_delay(TOL.disturbing_delay_factor * MS + 1)


def timed(
    *,
    answered_after: float | None = None,
    gave_up_after: float | None = None,
    invoke_at: float = 0.0,
    retransmits: int = 0,
    build=True,
):
    """g1 written on its connection at 0.0 and answered 0000 (or given up on) that much later."""
    h = story()
    h.send(
        "g1", at=invoke_at, sent_at=0.0, answered_at=answered_after, gave_up_at=gave_up_after, retransmits=retransmits
    )
    h.account_call("g1", 0.01, 0.02)
    return h.build() if build else h


@holds("answered-in-time")
def test_an_answer_exactly_at_the_limit_holds():
    return timed(answered_after=LIMIT)


@breaks("answered-in-time", "g1")
def test_an_answer_just_past_the_limit_breaks():
    return timed(answered_after=LIMIT + EPS)


@holds("answered-in-time")
def test_the_time_to_answer_is_counted_from_sent_at_not_from_the_invoke():
    return timed(answered_after=LIMIT, invoke_at=-1.0)


def test_a_late_answer_on_a_connection_that_needed_retransmits_is_a_note_not_a_verdict():
    h = timed(answered_after=LIMIT + 1.0, retransmits=2)
    assert check(h) == []
    assert len(notes(h)) == 1 and "accept queue" in notes(h)[0]
    assert notes(timed(answered_after=LIMIT + 1.0)) == []


@pytest.mark.parametrize("gave_up_after", [LIMIT / 2, LIMIT], ids=["well-before", "exactly-at"])
@holds("answered-in-time")
def test_a_channel_that_gave_up_before_the_limit_proves_nothing(gave_up_after):
    return timed(gave_up_after=gave_up_after)


@breaks("answered-in-time", "g1")
def test_a_channel_that_gave_up_just_past_the_limit_breaks():
    return timed(gave_up_after=LIMIT + EPS)


@holds("answered-in-time", alone=True)
def test_a_call_cut_by_a_relay_kill_is_not_timed():
    h = timed(answered_after=LIMIT + 1.0, build=False)
    h.kill("a", at=0.5)
    return h.build()


@holds("answered-in-time", alone=True)
def test_a_call_made_through_a_faulty_hub_proxy_is_not_timed():
    h = timed(answered_after=LIMIT + 1.0, build=False)
    h.toxic("hub-a", "latency", at=-0.1, attributes={"latency": 2000})
    return h.build()


# -- the rule book ---------------------------------------------------------------------------------
def test_every_rule_has_a_literal_history_where_it_holds_and_one_where_it_breaks():
    # the other literal tests' @holds/@breaks register their rules too
    from . import (  # noqa: F401
        test_checkers_batch_jobs,
        test_checkers_interface,
        test_checkers_money_ledger,
    )

    assert sorted(set(RULES) - HOLDS) == [], "rules without a literal history where they hold"
    assert sorted(set(RULES) - BREAKS) == [], "rules without a literal history where they break"
    assert set(RULES) >= HOLDS | BREAKS, "literal tests name rules that do not exist"


# -- checker bugs found by literal histories, fixed: each stays as a regression test -----------------
def test_a_malformed_guid_contained_in_another_guid_does_not_inherit_its_row():
    h = story()  # labels m1 and am1 become m1-TAG and am1-TAG in a real run
    h.send("m1-lit", raw=AMOUNT_ZERO.replace("m1", "m1-lit"), code="E400")
    paid(h, "am1-lit", at=1.0, answered_at=1.05)
    h.snapshot({"am1-lit": row("DONE", "0000", updated_at=1.05)}, at=1.1)
    assert check(h.build()) == []


def test_a_channel_resend_in_flight_when_reprocess_starts_may_raise_attempts_past_the_cap():
    assert check(reprocessed(CAP, channel_resend_at=1.95)) == []


def test_a_call_slowed_by_a_hub_toxic_added_while_it_was_in_flight_is_not_timed():
    h = timed(answered_after=LIMIT + 1.0, build=False)
    h.toxic("hub-a", "latency", at=0.1, attributes={"latency": 2000})
    assert "answered-in-time" not in {v.rule for v in check(h.build())}


def test_a_prompt_e903_delayed_by_a_hub_latency_toxic_is_not_judged():
    h = story(ms=2000)
    h.toxic("hub-a", "latency", at=-1.0, attributes={"latency": 400})
    h.send("g1", at=-0.2, answered_at=1.9)
    h.account_call("g1", -0.19, 1.5)
    h.send("g1", at=0.0, answered_at=0.41, code="E903")  # answered at once, then 400 ms in the hub
    assert "e903-at-once" not in {v.rule for v in check(h.build())}


def test_removing_a_hub_toxic_gives_the_checkers_back_their_power():
    h = story()
    name = h.toxic("hub-a", "latency", at=-1.0, attributes={"latency": 100})
    h.remove_toxic("hub-a", name, at=-0.5)
    h.send("g1", answered_at=0.05, code="E901")
    assert "answer-codes" in {v.rule for v in check(h.build())}


def test_a_guid_refused_for_an_extra_field_is_not_used_yet():
    h = story()
    h.send("x1", raw=EXTRA, code="E400")
    paid(h, "x1", at=1.0, answered_at=1.05, amount=2)
    assert check(h.build()) == []
