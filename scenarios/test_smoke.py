"""The stack starts around the relay under test, and a resend after a dropped answer debits once."""
from harness.channel import new_guid, transfer


def test_the_stack_starts_and_a_transfer_is_applied(stack):
    stack.account.seed({"alice": 100, "bob": 0})
    stack.start_relay()
    guid = new_guid()
    [outcome] = stack.send(transfer(guid, "alice", "bob", 10))
    assert outcome.code == "0000"
    assert stack.account_stats()["guids"][guid]["debits"] == 1


def test_a_resend_after_a_dropped_answer_is_not_a_second_debit(stack):
    stack.account.seed({"alice": 100, "bob": 0})
    stack.start_relay()
    guid = new_guid()
    request = transfer(guid, "alice", "bob", 10)
    toxic = stack.add_toxic("hub-a", "timeout", stream="downstream", timeout=0)
    [first] = stack.send(request, timeout_s=0.5)
    assert first.type == "info"
    stack.account.wait_calls(guid, 1)
    stack.remove_toxic("hub-a", toxic)
    stack.send(request)
    debits = stack.account_stats()["guids"][guid]["debits"]
    assert debits == 1, f"GUID {guid} was debited {debits} times: a resend after a dropped answer was sent again"
