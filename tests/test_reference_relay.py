"""The reference relay, rule by rule of the contract, against the real fixture through real Toxiproxy."""

import json
import sqlite3
import threading
import time

import pytest
import requests

from relaychaos.errors import RelayError
from relaychaos.stack.channel import new_guid, transfer

from .conftest import REFERENCE

pytestmark = pytest.mark.stack


@pytest.fixture
def ref(make_stack):
    stack = make_stack(REFERENCE, accounts={"alice": 1000, "bob": 0})
    stack.start_relay()
    return stack


def calls(stack, guid):
    return stack.account_stats()["guids"].get(guid, {}).get("calls", 0)


def row(stack, guid):
    return stack.ledger_rows().get(guid)


# -- a new GUID ---------------------------------------------------------------------------
def test_a_new_guid_is_claimed_and_committed_before_the_call_then_done(ref):
    guid = new_guid()
    [o] = ref.send(transfer(guid, "alice", "bob", 10))
    assert o.code == "0000" and json.loads(o.body)["guid"] == guid
    [call] = [c for c in ref.account_stats()["calls"] if c["guid"] == guid]
    assert call["sent_row"] is True, "the account system saw a committed SENT row when the transfer arrived"
    r = row(ref, guid)
    assert (r["status"], r["resp_code"], r["attempts"], r["response"]) == ("DONE", "0000", 1, o.body)
    assert json.loads(r["request"]) == transfer(guid, "alice", "bob", 10)


@pytest.mark.parametrize(
    "accounts, amount, code",
    [({"alice": 5, "bob": 0}, 10, "B201"), ({"alice": 1000}, 10, "B202"), ({"alice": 1000, "bob": 0}, 10, "E500")],
)
def test_definite_refusals_are_done_and_replayed(make_stack, accounts, amount, code):
    stack = make_stack(REFERENCE, accounts=accounts)
    stack.start_relay()
    guid = new_guid()
    if code == "E500":
        stack.account.set_faults(e500_guids=[guid])
    request = transfer(guid, "alice", "bob", amount)
    [first] = stack.send(request)
    [again] = stack.send(request)
    assert first.code == code and again.body == first.body
    assert row(stack, guid)["status"] == "DONE" and calls(stack, guid) == 1


# -- a known GUID -------------------------------------------------------------------------
def test_a_resend_of_a_done_guid_gets_the_saved_answer_byte_for_byte_and_no_call(ref):
    request = transfer(new_guid(), "alice", "bob", 10)
    [first] = ref.send(request)
    answers = [ref.send(request)[0] for _ in range(3)]
    assert {a.body for a in answers} == {first.body}
    assert calls(ref, request["guid"]) == 1


def test_a_duplicate_while_sent_gets_e903_at_once(ref):
    guid = new_guid()
    ref.account.set_faults(hold_guids=[guid])
    request = transfer(guid, "alice", "bob", 10)
    first = threading.Thread(target=ref.send, args=(request,))
    first.start()
    assert ref.account.wait_calls(guid, 1) == 1
    t0 = time.monotonic()
    [dup] = ref.send(request)
    assert dup.code == "E903" and time.monotonic() - t0 < 0.3
    ref.account.release([guid])
    first.join()
    assert calls(ref, guid) == 1


def test_a_dropped_answer_is_unknown_and_a_resend_is_not_sent_again(ref):
    guid = new_guid()
    ref.add_toxic("account", "timeout", stream="downstream", timeout=0)
    t0 = time.monotonic()
    [o] = ref.send(transfer(guid, "alice", "bob", 10))
    assert o.code == "E901" and time.monotonic() - t0 < ref.account_timeout_ms / 1000 + 1
    ref.heal()
    [again] = ref.send(transfer(guid, "alice", "bob", 10))
    assert again.code == "E901" and calls(ref, guid) == 1
    assert row(ref, guid)["status"] == "UNKNOWN"


def test_a_connection_broken_after_the_request_went_out_is_unknown(ref):
    guid = new_guid()
    ref.add_toxic("account", "limit_data", stream="downstream", bytes=1)
    [o] = ref.send(transfer(guid, "alice", "bob", 10))
    assert o.code == "E901" and row(ref, guid)["status"] == "UNKNOWN"
    assert ref.account_stats()["guids"][guid]["debits"] == 1


def test_a_refused_connection_is_failed_and_the_resend_claims_it_back_with_the_same_guid(ref):
    guid = new_guid()
    ref.set_proxy_enabled("account", False)
    [o] = ref.send(transfer(guid, "alice", "bob", 10))
    assert o.code == "E902" and row(ref, guid)["status"] == "FAILED" and calls(ref, guid) == 0
    ref.set_proxy_enabled("account", True)
    [again] = ref.send(transfer(guid, "alice", "bob", 10))
    assert again.code == "0000"
    assert (row(ref, guid)["status"], row(ref, guid)["attempts"]) == ("DONE", 2)
    assert calls(ref, guid) == 1


def test_a_guid_reused_for_a_different_request_gets_e904_and_nothing_is_sent(ref):
    guid = new_guid()
    ref.send(transfer(guid, "alice", "bob", 10))
    [o] = ref.send(transfer(guid, "alice", "bob", 11))
    assert o.code == "E904" and calls(ref, guid) == 1
    assert json.loads(row(ref, guid)["request"])["amount"] == 10


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[]",
        b'{"guid": "g1", "from": "alice", "to": "bob"}',
        b'{"guid": "g1", "from": "alice", "to": "bob", "amount": 1, "note": "x"}',
        b'{"guid": 7, "from": "alice", "to": "bob", "amount": 1}',
        b'{"guid": "' + b"g" * 65 + b'", "from": "alice", "to": "bob", "amount": 1}',
        b'{"guid": "g 1", "from": "alice", "to": "bob", "amount": 1}',
        b'{"guid": "g1", "from": "alice", "to": "bob", "amount": 0}',
        b'{"guid": "g1", "from": "alice", "to": "bob", "amount": -3}',
        b'{"guid": "g1", "from": "alice", "to": "bob", "amount": 1.5}',
        b'{"guid": "g1", "from": "alice", "to": "bob", "amount": true}',
        b'{"guid": "g1", "from": "alice", "to": "bob", "amount": "1"}',
        b'{"guid": "g1", "from": "", "to": "bob", "amount": 1}',
        b'{"guid": "g1", "from": "alice", "to": "bob", "amount": 1, "pad": "' + b"x" * 1_000_000 + b'"}',
    ],
    ids=[
        "empty",
        "not-json",
        "array",
        "missing",
        "extra",
        "guid-type",
        "guid-long",
        "guid-chars",
        "zero",
        "negative",
        "fraction",
        "boolean",
        "string-amount",
        "empty-from",
        "huge",
    ],
)
def test_a_malformed_request_gets_e400_no_row_and_no_call(ref, body):
    resp = requests.post(ref.relay_url() + "/transfer", data=body, timeout=5)
    assert resp.status_code == 400 and resp.json()["code"] == "E400"
    assert ref.ledger_rows() == {} and ref.account_stats()["calls"] == []


# -- races -------------------------------------------------------------------------------
def test_thirty_two_duplicates_at_once_make_one_call(ref):
    guid = new_guid()
    outcomes = ref.race(transfer(guid, "alice", "bob", 10), 32)
    assert calls(ref, guid) == 1
    assert sorted({o.code for o in outcomes}) in (["0000", "E903"], ["0000"])


def test_duplicates_split_across_two_relays_on_one_ledger_make_one_call(ref):
    ref.start_relay("b")
    guid = new_guid()
    request = transfer(guid, "alice", "bob", 10)
    ref.account.set_faults(hold_guids=[guid])
    senders = [threading.Thread(target=ref.race, args=(request, 16), kwargs={"slot": s}) for s in "ab"]
    for s in senders:
        s.start()
    assert ref.account.wait_calls(guid, 1) == 1
    time.sleep(0.3)  # give a wrongly admitted second call time to arrive before releasing
    ref.account.release([guid])
    for s in senders:
        s.join()
    assert calls(ref, guid) == 1


# -- resolve -----------------------------------------------------------------------------
def unknown_row(stack, amount=10, *, applied=True):
    """A GUID left UNKNOWN: the answer (applied) or the request (not applied) never got through."""
    guid = new_guid()
    stream = "downstream" if applied else "upstream"
    toxic = stack.add_toxic("account", "timeout", stream=stream, timeout=0)
    [o] = stack.send(transfer(guid, "alice", "bob", amount))
    assert o.code == "E901"
    stack.remove_toxic("account", toxic)
    return guid


def test_resolve_settles_unknown_rows_from_the_query_api(ref):
    applied, lost = unknown_row(ref), unknown_row(ref, applied=False)
    assert ref.supervisor.resolve(min_age_s=0).ok
    rows = ref.ledger_rows()
    assert (rows[applied]["status"], rows[applied]["resp_code"]) == ("DONE", "0000")
    assert json.loads(rows[applied]["response"])["code"] == "0000"
    assert rows[lost]["status"] == "FAILED"
    [replay] = ref.send(transfer(applied, "alice", "bob", 10))
    assert replay.body == rows[applied]["response"] and calls(ref, applied) == 1


def test_resolve_leaves_rows_younger_than_min_age_and_rows_it_cannot_query(ref):
    guid = unknown_row(ref)
    assert ref.supervisor.resolve(min_age_s=3600).ok
    assert row(ref, guid)["status"] == "UNKNOWN"
    ref.set_proxy_enabled("account", False)
    assert ref.supervisor.resolve(min_age_s=0).ok
    assert row(ref, guid)["status"] == "UNKNOWN"


def test_resolve_settles_a_sent_row_orphaned_by_a_crash(ref):
    guid = new_guid()
    ref.account.set_faults(hold_guids=[guid])
    sender = threading.Thread(target=ref.send, args=(transfer(guid, "alice", "bob", 10),))
    sender.start()
    assert ref.account.wait_calls(guid, 1) == 1
    ref.kill_relay()
    sender.join()
    ref.account.release([guid])
    assert row(ref, guid)["status"] == "SENT"
    ref.start_relay()
    assert ref.send(transfer(guid, "alice", "bob", 10))[0].code == "E903"
    assert ref.supervisor.resolve(min_age_s=0).ok
    assert (row(ref, guid)["status"], row(ref, guid)["resp_code"]) == ("DONE", "0000")


# -- reprocess ---------------------------------------------------------------------------
def failed_row(stack):
    guid = new_guid()
    stack.set_proxy_enabled("account", False)
    assert stack.send(transfer(guid, "alice", "bob", 10))[0].code == "E902"
    stack.set_proxy_enabled("account", True)
    return guid


def test_reprocess_resends_failed_rows_with_the_same_guid_and_never_unknown_ones(ref):
    failed, unknown = failed_row(ref), unknown_row(ref, applied=False)
    assert ref.supervisor.reprocess(max_attempts=3).ok
    stats = ref.account_stats()["guids"]
    assert stats[failed]["calls"] == 1 and row(ref, failed)["status"] == "DONE"
    assert row(ref, failed)["attempts"] == 2
    assert unknown not in stats and row(ref, unknown)["status"] == "UNKNOWN"


def test_reprocess_stops_at_the_attempt_cap(ref):
    guid = failed_row(ref)
    ref.set_proxy_enabled("account", False)
    for _ in range(4):
        assert ref.supervisor.reprocess(max_attempts=3).ok
    assert (row(ref, guid)["status"], row(ref, guid)["attempts"]) == ("FAILED", 3)


def test_two_reprocess_runs_at_once_send_each_guid_once(ref):
    guids = [failed_row(ref) for _ in range(20)]
    ref.add_toxic("account", "latency", stream="downstream", latency=50)
    runs = [ref.supervisor.start_batch("reprocess", 5) for _ in range(2)]
    assert all(ref.supervisor.wait_batch(r, 30).ok for r in runs)
    stats = ref.account_stats()["guids"]
    assert [stats[g]["calls"] for g in guids] == [1] * 20


# -- purge -------------------------------------------------------------------------------
def test_purge_deletes_only_done_rows_older_than_the_retention(ref):
    done = new_guid()
    ref.send(transfer(done, "alice", "bob", 1))
    failed, unknown = failed_row(ref), unknown_row(ref)
    assert ref.supervisor.purge(retention_s=3600).ok
    assert set(ref.ledger_rows()) == {done, failed, unknown}
    assert ref.supervisor.purge(retention_s=0).ok
    assert set(ref.ledger_rows()) == {failed, unknown}


# -- a broken ledger ---------------------------------------------------------------------
def test_a_corrupt_ledger_file_stops_serve_with_a_clear_message(make_stack):
    stack = make_stack(REFERENCE)
    stack.ledger_path.write_bytes(b"this is not a SQLite database" * 100)
    with pytest.raises(RelayError) as e:
        stack.start_relay()
    assert "cannot open the ledger" in str(e.value)


def test_a_locked_ledger_gets_e902_and_nothing_is_sent(ref):
    guid = new_guid()
    lock = sqlite3.connect(ref.ledger_path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        [o] = ref.send(transfer(guid, "alice", "bob", 10))
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert o.code == "E902" and calls(ref, guid) == 0
    log = ref.workdir / "relay-a.log"  # the relay's output reaches its log through the sandbox's pump
    deadline = time.monotonic() + 10
    while "ledger error" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "ledger error" in log.read_text()
