"""The real stack end to end: channel → [hub proxy] → relay_base → [account proxy] → account system."""

import pytest

from relaychaos.recorder import Recorder
from relaychaos.stack.channel import RetryPolicy, new_guid, transfer

from .conftest import BASE

pytestmark = pytest.mark.stack


@pytest.fixture
def base(make_stack):
    stack = make_stack(BASE, accounts={"alice": 1000, "bob": 0})
    stack.start_relay()
    return stack


def test_a_transfer_flows_through_every_part_and_is_applied_once(base):
    guid, recorder = new_guid(), Recorder()
    [outcome] = base.send(transfer(guid, "alice", "bob", 30), recorder=recorder)
    assert (outcome.type, outcome.status, outcome.code) == ("ok", 200, "0000")
    stats = base.account_stats()
    assert stats["guids"][guid] == {"calls": 1, "debits": 1, "codes": ["0000"], "first_code": "0000"}
    assert stats["balances"] == {"alice": 970, "bob": 30}
    assert base.ledger_rows()[guid]["status"] == "DONE"
    kinds = [(e.process.split("-")[0], e.type, e.f) for e in recorder.history.where(f="transfer")]
    assert kinds == [("channel", "invoke", "transfer"), ("channel", "ok", "transfer")]


def test_latency_on_the_way_back_times_the_channel_out_while_the_debit_was_applied(base):
    base.add_toxic("hub-a", "latency", stream="downstream", latency=3000)
    guid = new_guid()
    [outcome] = base.send(transfer(guid, "alice", "bob", 10), timeout_s=0.5)
    assert outcome.type == "info" and "no answer within 0.5 s" in outcome.error
    assert base.account.wait_calls(guid, 1) == 1
    assert base.account_stats()["guids"][guid]["debits"] == 1  # applied, though the channel never heard


def test_a_disabled_account_proxy_is_a_refused_connection_and_nothing_is_sent(base):
    base.set_proxy_enabled("account", False)
    guid = new_guid()
    [outcome] = base.send(transfer(guid, "alice", "bob", 10))
    assert outcome.code == "E902"
    assert guid not in base.account_stats()["guids"]
    assert base.ledger_rows()[guid]["status"] == "FAILED"


def test_a_disabled_hub_proxy_refuses_the_channel_itself(base):
    base.set_proxy_enabled("hub-a", False)
    [outcome] = base.send(transfer(new_guid(), "alice", "bob", 10))
    assert outcome.type == "info" and "Connect" in outcome.error


def test_relay_base_debits_twice_when_the_channel_resends_after_a_dropped_response(base):
    guid, request = new_guid(), None
    request = transfer(guid, "alice", "bob", 100)
    toxic = base.add_toxic("hub-a", "timeout", stream="downstream", timeout=0)  # the answer never comes back
    [first] = base.send(request, timeout_s=0.5)
    assert first.type == "info"
    assert base.account.wait_calls(guid, 1) == 1
    base.remove_toxic("hub-a", toxic)
    [second] = base.send(request)  # the careful channel resends the same GUID
    assert second.code == "0000"
    stats = base.account_stats()
    assert stats["guids"][guid]["debits"] == 2, "relay_base has no dedup: the resend is a second debit"
    assert stats["balances"]["alice"] == 800


def test_a_retry_policy_resends_the_same_guid_after_a_time_out(base):
    base.add_toxic("hub-a", "timeout", stream="downstream", timeout=0)
    guid, recorder = new_guid(), Recorder()
    outcomes = base.send(transfer(guid, "alice", "bob", 1), RetryPolicy(attempts=3), timeout_s=0.3, recorder=recorder)
    assert [o.attempt for o in outcomes] == [1, 2, 3] and {o.guid for o in outcomes} == {guid}
    invokes = recorder.history.where(f="transfer", type="invoke")
    assert {e.value["request"]["guid"] for e in invokes} == {guid}
    assert base.account.wait_calls(guid, 3) == 3


def test_thirty_two_duplicates_released_together_all_reach_relay_base(base):
    guid, recorder = new_guid(), Recorder()
    outcomes = base.race(transfer(guid, "alice", "bob", 1), 32, recorder=recorder)
    assert [o.code for o in outcomes] == ["0000"] * 32
    assert base.account_stats()["guids"][guid]["debits"] == 32
    invokes = [e for e in recorder.history.where(f="transfer", type="invoke")]
    first_answer = recorder.history.where(f="transfer", type="ok")[0].index
    assert all(e.index < first_answer for e in invokes), "all 32 were sent before any answer came"


def test_killing_and_restarting_the_relay_keeps_its_ledger_and_hub_address(base):
    guid = new_guid()
    base.send(transfer(guid, "alice", "bob", 5))
    hub = base.relay_url("a")
    old_pid = base.supervisor.relays["a"].child.pid
    base.restart_relay("a")
    assert base.relay_url("a") == hub and base.supervisor.relays["a"].child.pid != old_pid
    assert base.ledger_rows()[guid]["status"] == "DONE"
    assert base.send(transfer(new_guid(), "alice", "bob", 5))[0].code == "0000"
