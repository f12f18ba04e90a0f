"""Scenarios for the contract's answer table, with no fault: the rules every relay must keep."""
from harness.steps import Release, Scenario, Send, ServerFault, WaitCalls

SCENARIOS = [
    Scenario("happy-path", family="basic", description="three transfers, each answered 0000 and debited once",
             steps=(Send("g1", amount=10), Send("g2", amount=20, src="bob", dst="alice"), Send("g3", amount=5))),
    Scenario("resend-after-done", family="basic",
             description="a DONE GUID sent three more times gets its saved answer, byte for byte, and no call",
             steps=(Send("g1"), Send("g1"), Send("g1"), Send("g1"))),
    Scenario("resend-while-in-flight", family="basic", account_timeout_ms=2000,
             description="a duplicate arrives while the account system holds the first call: E903 at once",
             steps=(ServerFault(hold_guids=("g1",)), Send("g1", background=True), WaitCalls("g1"),
                    Send("g1"), Send("g1"), Release(("g1",)))),
    Scenario("account-e500", family="basic", description="the account system answers E500: DONE, replayed, no retry",
             steps=(ServerFault(e500_guids=("g1",)), Send("g1"), Send("g1"))),
    Scenario("account-b2xx", family="basic",
             description="insufficient funds, unknown account, invalid amount: definite refusals, replayed",
             accounts={"alice": 50, "bob": 0},
             steps=(Send("g1", amount=500), Send("g2", dst="carol"), Send("g1", amount=500), Send("g3", amount=5))),
    Scenario("guid-reused", family="basic",
             description="a GUID reused with a different amount or payee gets E904 and nothing is sent",
             steps=(Send("g1", amount=10), Send("g1", amount=11), Send("g1", amount=10, dst="alice", src="bob"),
                    Send("g1", amount=10))),
    Scenario("malformed-requests", family="basic",
             description="malformed bodies get HTTP 400 E400, no ledger row and no account call",
             steps=tuple(Send(f"m{i}", raw=body) for i, body in enumerate([
                 "", "not json", "[]", '{"guid": "m3", "from": "alice", "to": "bob"}',
                 '{"guid": "m4", "from": "alice", "to": "bob", "amount": 0}',
                 '{"guid": "m5", "from": "alice", "to": "bob", "amount": 1.5}',
                 '{"guid": "m6", "from": "alice", "to": "bob", "amount": true}',
                 '{"guid": "m 7", "from": "alice", "to": "bob", "amount": 1}',
                 '{"guid": "m8", "from": "alice", "to": "bob", "amount": 1, "extra": 1}',
                 '{"guid": "' + "x" * 65 + '", "from": "alice", "to": "bob", "amount": 1}'])) + (Send("g1"),)),
]
