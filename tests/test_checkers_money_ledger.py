"""Every money and ledger rule proved on literal histories: where it holds, where it breaks, its boundary.
The batch jobs' rules (purge, resolve, reprocess) are in test_checkers_batch_jobs.py.

See literal_support.py for `@holds` / `@breaks` and the stories.
"""

from __future__ import annotations

import json

import pytest

from relaychaos import checkers
from relaychaos.checkers.facts import Facts
from relaychaos.history import History
from relaychaos.stack.channel import transfer

from .history_builder import row
from .literal_support import (
    AMOUNT_ZERO,
    EXTRA,
    breaks,
    holds,
    one_paid_transfer,
    paid,
    story,
)


# -- money -----------------------------------------------------------------------------------------
@holds(
    "one-account-call",
    "one-debit",
    "exactly-once",
    "balances",
    "write-before-send",
    "ledger-agrees",
    "converged",
    "answer-codes",
    "answered-in-time",
    "interface",
    "ledger-schema",
    "serve-ready",
)
def test_a_first_send_applied_once_and_answered_0000_holds():
    return one_paid_transfer().build()


def two_calls_one_debit() -> History:
    h = story()
    h.send("g1", at=0.0, answered_at=0.5)
    h.account_call("g1", 0.01, 0.02)
    h.account_call("g1", 0.2, 0.21, code="E500")
    return h.build()


@breaks("one-account-call", "g1")
def test_a_second_account_call_for_the_same_guid_breaks():
    return two_calls_one_debit()


@holds("one-debit", alone=True)
def test_a_second_call_that_applied_nothing_still_keeps_one_debit():
    return two_calls_one_debit()


@breaks("one-debit", "g1")
def test_a_guid_debited_twice_breaks():
    h = story()
    h.send("g1", at=0.0, answered_at=0.5)
    h.account_call("g1", 0.01, 0.02)
    h.account_call("g1", 0.2, 0.21)
    return h.build()


@holds("guid-preserved", "one-account-call", "one-debit", "balances")
def test_balances_moved_once_by_every_applied_guid_hold():
    h = one_paid_transfer()
    paid(h, "g2", at=0.2, answered_at=0.3, amount=5)
    return h.build()


@breaks("guid-preserved", "g1-retry")
def test_an_account_call_under_a_guid_the_channel_never_sent_breaks():
    h = story()
    h.send("g1", at=0.0, answered_at=0.4, code="E901")
    h.account_call("g1-retry", 0.1, 0.11, request=transfer("g1-retry", "alice", "bob", 1))
    return h.build()


@breaks("guid-preserved", "g1")
def test_an_account_call_carrying_another_request_than_the_channels_breaks():
    h = story()
    h.send("g1")
    h.account_call("g1", 0.01, 0.02, request=transfer("g1", "alice", "bob", 5))
    return h.build()


@breaks("exactly-once", "g1")
def test_a_0000_answer_the_account_system_never_debited_breaks():
    h = story()
    h.send("g1")
    return h.build()


@breaks("exactly-once", "g1")
def test_a_refusal_answered_for_a_debited_guid_breaks():
    h = story()
    h.send("g1", code="B201")
    h.account_call("g1", 0.01, 0.02)
    return h.build()


@holds("exactly-once")
def test_a_refusal_answered_as_the_account_system_refused_holds():
    h = story()
    h.send("g1", amount=500, code="B201")
    h.account_call("g1", 0.01, 0.02, code="B201")
    h.snapshot({"g1": row("DONE", "B201", updated_at=0.05)}, at=0.1)
    return h.build()


@breaks("balances", None)
def test_money_destroyed_breaks_balances():
    h = one_paid_transfer()
    h.balances = {"alice": 99, "bob": 0}
    return h.build()


@breaks("balances", "ghost")
def test_a_debit_under_a_guid_the_channel_never_sent_breaks_balances():
    h = one_paid_transfer()
    h.account_call("ghost", 0.2, 0.21, request=transfer("ghost", "alice", "bob", 5))
    return h.build()


@breaks("one-debit-per-payment", "p1")
def test_a_careless_client_whose_two_guids_for_one_payment_were_both_debited_breaks():
    h = story()
    h.send("p1", at=0.0, answered_at=None, gave_up_at=0.2, error="ServerDisconnectedError", intent="p1")
    h.account_call("p1", 0.05, 0.06)
    paid(h, "p1-retry2", at=1.0, answered_at=1.05, intent="p1")
    return h.build()


@holds("one-debit-per-payment")
def test_a_careless_client_whose_first_guid_was_never_sent_holds():
    h = story()
    h.disable("account", at=0.0)
    h.send("p1", at=0.1, answered_at=0.12, code="E902", intent="p1")
    h.enable("account", at=0.5)
    paid(h, "p1-retry2", at=1.0, answered_at=1.05, intent="p1")
    return h.build()


# -- the ledger ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ledger_status, ledger_error", [(None, None), ("RECEIVED", None), (None, "database is locked")]
)
@breaks("write-before-send", "g1")
def test_an_account_call_without_a_committed_sent_row_breaks(ledger_status, ledger_error):
    h = story()
    h.send("g1")
    h.account_call("g1", 0.01, 0.02, ledger_status=ledger_status, ledger_error=ledger_error)
    return h.build()


@holds("write-before-send")
def test_a_first_call_reaching_the_account_system_after_the_relay_gave_up_on_it_holds():
    """Its row was claimed SENT and committed; it became UNKNOWN while the request was on its way."""
    h = story()
    h.send("g1", at=0.0, answered_at=0.4, code="E901")
    h.account_call("g1", 0.35, 0.36, ledger_status="UNKNOWN")
    return h.build()


@breaks("write-before-send", "g1")
def test_a_second_call_finding_the_row_unknown_breaks():
    """A resend of an UNKNOWN row: never blindly (contract §3)."""
    h = story()
    h.send("g1", at=0.0, answered_at=0.4, code="E901")
    h.account_call("g1", 0.01, 0.02)
    h.account_call("g1", 0.5, 0.51, ledger_status="UNKNOWN")
    return h.build()


@pytest.mark.parametrize(
    "status, code, call_code", [("DONE", "0000", "B201"), ("DONE", "0000", None), ("FAILED", "E902", "0000")]
)
@breaks("ledger-agrees", "g1")
def test_a_final_row_that_disagrees_with_the_account_system_breaks(status, code, call_code):
    h = story()
    h.send("g1", code=code)
    if call_code:
        h.account_call("g1", 0.01, 0.02, code=call_code)
    h.snapshot({"g1": row(status, code, updated_at=0.05)}, at=0.1)
    return h.build()


def moved(before: str | None, after: str | None, kind: str) -> History:
    """One row seen as `before`, then as `after` (None: no row) after a step of `kind`."""
    h = story()
    h.snapshot({} if before is None else {"g1": row(before)}, at=1.0)
    h.snapshot({} if after is None else {"g1": row(after)}, at=2.0, kind=kind)
    return h.build()


@pytest.mark.parametrize(
    "before, after, kind",
    [
        (None, "SENT", "send"),
        ("SENT", "DONE", "send"),
        ("SENT", "UNKNOWN", "send"),
        ("SENT", "FAILED", "send"),
        ("FAILED", "SENT", "reprocess"),
        ("UNKNOWN", "DONE", "resolve"),
        ("UNKNOWN", "FAILED", "resolve"),
        ("SENT", "DONE", "resolve"),
        ("DONE", None, "purge"),
    ],
)
@holds("transitions", alone=True)
def test_a_row_moving_along_the_contracts_transitions_holds(before, after, kind):
    return moved(before, after, kind)


@pytest.mark.parametrize(
    "before, after, kind",
    [
        ("DONE", "SENT", "send"),
        ("UNKNOWN", "FAILED", "send"),
        ("UNKNOWN", "SENT", "reprocess"),
        ("FAILED", None, "purge"),
        ("UNKNOWN", None, "purge"),
        ("DONE", None, "resolve"),
    ],
)
@breaks("transitions", "g1")
def test_a_row_moving_against_the_contracts_transitions_breaks(before, after, kind):
    return moved(before, after, kind)


def test_the_state_machine_stops_a_story_at_the_step_whose_row_moved_against_the_transitions():
    """checkers.broken_now, the machine's check after each step beside the account system's counts."""
    assert checkers.broken_now(moved("UNKNOWN", "FAILED", "race"))
    assert not checkers.broken_now(moved("UNKNOWN", "DONE", "resolve"))
    assert not checkers.broken_now(moved(None, "SENT", "send"))


@pytest.mark.parametrize("status", ["SENT", "UNKNOWN", "RECEIVED"])
@breaks("converged", "g1")
def test_a_row_left_undecided_after_the_final_phase_breaks(status):
    h = story()
    h.snapshot({"g1": row(status)}, at=1.0, kind="end")
    return h.build()


@pytest.mark.parametrize("status", ["SENT", "UNKNOWN"])
def test_a_row_undecided_in_a_story_judged_before_its_final_phase_is_no_verdict(status):
    """The state machine judges a story at the step that broke an invariant: no final phase has run yet."""
    h = story()
    h.snapshot({"g1": row(status)}, at=1.0, kind="race", after_step=8)
    assert [v.rule for v in checkers.check(h.build(), so_far=True)] == []
    assert [v.rule for v in checkers.check(h.build())] == ["converged"]


@pytest.mark.parametrize("status", ["DONE", "FAILED"])
@holds("converged", alone=True)
def test_a_row_settled_after_the_final_phase_holds(status):
    h = story()
    h.snapshot({"g1": row(status)}, at=1.0, kind="end")
    return h.build()


@holds("malformed-no-effect", "answer-codes", "interface")
def test_a_malformed_body_answered_e400_with_no_row_and_no_call_holds():
    h = story()
    h.send("m1", raw=AMOUNT_ZERO, code="E400")
    return h.build()


@pytest.mark.parametrize("left", ["a row", "an account call"])
@breaks("malformed-no-effect", "m1")
def test_a_malformed_body_answered_e400_that_left_a_row_or_an_account_call_breaks(left):
    h = story()
    h.send("m1", raw=AMOUNT_ZERO, code="E400")
    if left == "a row":
        h.snapshot({"m1": row("FAILED", "B203", request=json.loads(AMOUNT_ZERO))}, at=0.1)
    else:
        h.account_call("m1", 0.01, 0.02, code="B203", request=json.loads(AMOUNT_ZERO))
    return h.build()


@holds("malformed-no-effect", "answer-codes", "interface", "guid-preserved", "balances", "exactly-once")
def test_a_body_with_an_unknown_extra_field_refused_with_e400_and_no_effect_holds():
    h = story()
    h.send("x1", raw=EXTRA, code="E400", status=400)
    return h.build()


@pytest.mark.parametrize("forwarded", [False, True], ids=["extra-dropped", "extra-forwarded"])
@holds("malformed-no-effect", "answer-codes", "guid-preserved", "balances", "exactly-once")
def test_a_body_with_an_unknown_extra_field_processed_like_any_transfer_holds(forwarded):
    h = story()
    h.send("x1", raw=EXTRA, answered_at=0.05)
    h.account_call("x1", 0.01, 0.02, request=json.loads(EXTRA) if forwarded else transfer("x1", "alice", "bob", 1))
    h.snapshot({"x1": row("DONE", "0000", updated_at=0.05)}, at=0.1)
    built = h.build()
    assert Facts(built).channel_guids == {"x1": transfer("x1", "alice", "bob", 1)}
    assert Facts(built).stats["balances"] == {"alice": 99, "bob": 1}
    return built


@breaks("exactly-once", "x1")
def test_a_body_with_an_unknown_extra_field_counts_as_a_send_of_its_guid_for_exactly_once():
    h = story()
    h.send("x1", raw=EXTRA, answered_at=0.05)
    return h.build()
