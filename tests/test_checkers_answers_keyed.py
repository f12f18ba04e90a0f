"""A keyed service's answers proved on literal histories: the idempotency-key profile's statuses, read by
relaychaos.idempotency_key, judged by the same answer rules as the course's codes (a 409 at once, a 422 only
for another payload, nothing sent for a malformed request).

See literal_support.py for `@holds` / `@breaks` and the stories.
"""

from __future__ import annotations

import pytest

from relaychaos.checkers import check
from relaychaos.history import History
from relaychaos.stack.api_profile import Api, Ledger, Profile
from relaychaos.stack.channel import transfer

from .history_builder import HistoryBuilder
from .literal_support import (
    AMOUNT_ZERO,
    EPS,
    MS,
    TOL,
    breaks,
    holds,
    paid,
    story,
)

# -- a keyed service's answers (the idempotency-key profile: its statuses read by relaychaos.idempotency_key) --------
KEYED_PROVIDES = sorted(
    Profile(api=Api(profile="idempotency-key", path="/payments"), ledger=Ledger("none")).provides(())
)


def keyed_story(ms: int = MS) -> HistoryBuilder:
    """A story of a black-box keyed service: its answers recorded as statuses, read in the contract's words."""
    h = story(ms=ms)
    h.header.update(profile="idempotency-key", provides=KEYED_PROVIDES)
    return h


def keyed_duplicate(took: float, status: int = 409) -> History:
    """k1's PSP call in flight from -0.19 to 1.5; a duplicate with the same payload written at 0.0, answered
    `status` `took` later."""
    h = keyed_story(ms=2000)
    h.send("g1", at=-0.2, answered_at=1.51, status=201)
    h.account_call("g1", -0.19, 1.5)
    h.send("g1", at=0.0, answered_at=took, status=status)
    return h.build()


@holds("e903-at-once")
def test_a_keyed_duplicate_answered_409_within_its_share_of_the_wait_holds():
    return keyed_duplicate(TOL.e903_wait_share * 1.5)


@holds("e903-at-once")
def test_a_keyed_duplicate_answered_409_before_the_psp_answered_did_not_wait_for_it_and_holds():
    return keyed_duplicate(1.5 - EPS)


@breaks("e903-at-once", "g1")
def test_a_keyed_duplicate_answered_409_just_after_the_psp_answered_breaks():
    return keyed_duplicate(1.5 + EPS)


def test_a_keyed_duplicate_that_waited_for_the_psp_and_replayed_its_201_is_named_in_the_services_words():
    (v,) = [v for v in check(keyed_duplicate(1.52, status=201)) if v.rule == "e903-at-once"]
    assert v.summary.startswith("a duplicate reached the service while this key's PSP call was in flight")
    assert "was answered HTTP 201 after 1.520 s; it should get 409 within" in v.summary
    assert "without waiting for the PSP" in v.summary and "GUID" not in v.summary and "E903" not in v.summary


@breaks("e903-at-once", "g1")
def test_a_duplicate_the_relay_never_answered_while_the_guid_was_being_sent_breaks():
    h = story(ms=2000)
    h.send("g1", at=-0.2, answered_at=1.51)
    h.account_call("g1", -0.19, 1.5)
    h.send("g1", at=0.0, answered_at=None, gave_up_at=1.0)
    return h.build()


@holds("e903-at-once", alone=True)
def test_a_duplicate_unanswered_because_the_relay_was_killed_is_not_judged():
    h = story(ms=2000)
    h.send("g1", at=-0.2, answered_at=None, gave_up_at=0.5, error="ServerDisconnectedError")
    h.account_call("g1", -0.19, 1.5)
    h.kill("a", at=0.4)
    h.send("g1", at=0.0, answered_at=None, gave_up_at=0.5, error="ServerDisconnectedError")
    return h.build()


def keyed_answer(
    status: int, *, fault: str | None = None, reused: bool = False, raw: str | None = None, call: str | None = "0000"
) -> History:
    """A first send of key g1 (after an earlier payload for g1 was paid, if reused) answered `status`; its PSP
    call answered `call` (None: no PSP call)."""
    h = keyed_story()
    if reused:
        paid(h, "g1", at=-1.0, answered_at=-0.95, amount=2, status=201)
    if fault == "psp down":
        h.disable("account", at=-0.1)
    elif fault == "timeout toxic":
        h.toxic("account", "timeout", at=-0.1, attributes={"timeout": 0})
    h.send("g1", answered_at=0.05, status=status, raw=raw)
    if call is not None and not reused and raw is None:
        h.account_call("g1", 0.01, 0.02, code=call, applied=call == "0000" and fault != "psp down")
    return h.build()


KEYED_ALLOWED = {
    "201 to a first send with no fault": lambda: keyed_answer(201),
    "402 to a first send the PSP refused": lambda: keyed_answer(402, call="B201"),
    "502 to a first send the PSP answered 500": lambda: keyed_answer(502, call="E500"),
    "503 while the PSP's address refused connections": lambda: keyed_answer(503, fault="psp down", call=None),
    "504 under a timeout toxic": lambda: keyed_answer(504, fault="timeout toxic"),
    "422 for a key used with another payload": lambda: keyed_answer(422, reused=True),
    "400 to a malformed body": lambda: keyed_answer(400, raw=AMOUNT_ZERO.replace("m1", "g1")),
}


@pytest.mark.parametrize("case", sorted(KEYED_ALLOWED))
@holds("answer-codes")
def test_an_answer_a_keyed_services_table_allows_holds(case):
    return KEYED_ALLOWED[case]()


KEYED_FORBIDDEN = {
    "409 to a first send with nothing in flight": lambda: keyed_answer(409),
    "502 to a first send with no fault": lambda: keyed_answer(502),
    "201 while the PSP's address refused connections": lambda: keyed_answer(201, fault="psp down", call=None),
    "201 for a key used with another payload": lambda: keyed_answer(201, reused=True),
    "201 to a malformed body": lambda: keyed_answer(201, raw=AMOUNT_ZERO.replace("m1", "g1")),
    "422 to a malformed body": lambda: keyed_answer(422, raw=AMOUNT_ZERO.replace("m1", "g1")),
}


@pytest.mark.parametrize("case", sorted(KEYED_FORBIDDEN))
@breaks("answer-codes", "g1")
def test_an_answer_a_keyed_services_table_forbids_breaks(case):
    return KEYED_FORBIDDEN[case]()


@breaks("answer-codes", "g1")
def test_a_422_to_a_resend_with_the_first_payload_after_its_201_breaks():
    h = keyed_story()
    paid(h, "g1", status=201)
    h.send("g1", at=0.2, answered_at=0.21, status=422)
    return h.build()


@breaks("answer-codes", "g1")
def test_a_201_for_a_payment_never_sent_to_the_psp_after_a_5xx_breaks():
    h = keyed_story()
    h.toxic("account", "timeout", at=-0.1, attributes={"timeout": 0})
    h.send("g1", at=0.0, answered_at=0.4, status=504)
    h.heal(at=0.5)
    h.send("g1", at=0.6, answered_at=0.65, status=201)
    return h.build()


def test_a_keyed_verdict_quotes_the_services_table_in_statuses():
    (v,) = [v for v in check(keyed_answer(422, raw=AMOUNT_ZERO.replace("m1", "g1"))) if v.rule == "answer-codes"]
    assert v.summary.startswith("the service answered HTTP 422, but for a malformed request") and v.summary.endswith(
        "allows 400"
    )
    (v,) = [v for v in check(keyed_answer(201, fault="psp down", call=None)) if v.rule == "answer-codes"]
    assert "no PSP call of this key was ever made" in v.summary


@holds("answer-codes", "e903-at-once")
def test_a_409_or_a_422_for_another_payload_while_the_keys_first_payload_is_in_flight_holds():
    h = keyed_story(ms=2000)
    h.send("g1", at=-0.2, answered_at=1.51, status=201)
    h.account_call("g1", -0.19, 1.5)
    h.send("g1", at=0.0, answered_at=0.01, status=409, amount=2)
    h.send("g1", at=0.1, answered_at=0.11, status=422, amount=3)
    return h.build()


def reused_key(second_call: bool) -> History:
    """Key g1 paid with amount 2; reused with amount 1 and answered 422; the PSP called with the second payload
    if `second_call`."""
    h = keyed_story()
    paid(h, "g1", at=0.0, answered_at=0.05, amount=2, status=201)
    h.send("g1", at=0.2, answered_at=0.25, status=422)
    if second_call:
        h.account_call("g1", 0.21, 0.22, request=transfer("g1", "alice", "bob", 1), applied=False, code="B201")
    return h.build()


@holds("guid-preserved", "answer-codes", "one-account-call")
def test_a_key_reused_with_another_payload_refused_422_with_no_psp_call_holds():
    return reused_key(second_call=False)


@breaks("guid-preserved", "g1")
def test_a_psp_call_with_the_reused_keys_second_payload_breaks_even_when_answered_422():
    return reused_key(second_call=True)


@breaks("malformed-no-effect", "m1")
def test_a_black_box_keyed_service_that_calls_the_psp_for_a_malformed_request_breaks():
    h = keyed_story()
    h.send("m1", raw=AMOUNT_ZERO, status=400)
    h.account_call("m1", 0.01, 0.02, request={"guid": "m1", "from": "alice", "to": "bob", "amount": 0})
    return h.build()


@holds("malformed-no-effect", "answer-codes")
def test_a_black_box_keyed_service_answering_400_to_a_request_without_its_key_and_calling_nothing_holds():
    h = keyed_story()
    h.send("m1", raw=AMOUNT_ZERO.replace('"m1"', '" m1"'), status=400)  # the channel sends no key header
    return h.build()


def keyed_replay(status: int) -> History:
    """k1 executed and answered 201; a resend answered `status` with the same body."""
    h = keyed_story()
    h.send("g1", at=0.0, answered_at=0.1, status=201, body='{"id": "pay_1"}')
    h.account_call("g1", 0.01, 0.09)
    h.send("g1", at=0.2, answered_at=0.25, status=status, body='{"id": "pay_1"}')
    return h.build()


@holds("done-replay")
def test_a_keyed_replay_with_the_first_status_and_body_holds():
    return keyed_replay(201)


@breaks("done-replay", "g1")
def test_a_keyed_replay_of_the_stored_body_under_another_2xx_status_breaks():
    return keyed_replay(200)  # Stripe saves "the resulting status code and body of the first request"
