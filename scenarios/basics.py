"""Scenarios for the contract's answer table, with no fault: the rules every relay must keep."""

from relaychaos.checkers.claims import AccountAnswered, SentWhileInFlight
from relaychaos.engine.steps import Release, Scenario, Send, ServerFault, WaitCalls

# Malformed per contract §3 (${guid} is the run's GUID for the step's label, so any row or call they
# wrongly cause is found): not a JSON object, a missing field, a wrong type, a value out of range.
MALFORMED = [
    "",
    "not json",
    "[]",
    '{"guid": "${guid}", "from": "alice", "to": "bob"}',
    '{"guid": "${guid}", "from": "alice", "to": "bob", "amount": 0}',
    '{"guid": "${guid}", "from": "alice", "to": "bob", "amount": 1.5}',
    '{"guid": "${guid}", "from": "alice", "to": "bob", "amount": true}',
    '{"guid": " ${guid}", "from": "alice", "to": "bob", "amount": 1}',
    '{"guid": "' + "x" * 54 + '${guid}", "from": "alice", "to": "bob", "amount": 1}',
    '{"guid": "${guid}", "from": 7, "to": "bob", "amount": 1}',
]
# Well-formed but for a field beyond the four: E400 or processed, both accepted (v1.1).
EXTRA_FIELD = '{"guid": "${guid}", "from": "alice", "to": "bob", "amount": 1, "extra": 1}'

SCENARIOS = [
    Scenario(
        "happy-path",
        family="basic",
        description="three transfers, each answered 0000 and debited once",
        steps=(Send("g1", amount=10), Send("g2", amount=20, src="bob", dst="alice"), Send("g3", amount=5)),
        covers=("1.ready", "2.transfer", "3.health", "3.answer", "3.claim-new", "3.definite", "4.schema", "4.readers"),
    ),
    Scenario(
        "resend-after-done",
        family="basic",
        description="a DONE GUID sent three more times gets its saved answer, byte for byte, and no call",
        steps=(Send("g1"), Send("g1"), Send("g1"), Send("g1")),
        covers=("3.done-replay",),
    ),
    Scenario(
        "resend-while-in-flight",
        family="basic",
        account_timeout_ms=2000,
        description="a duplicate arrives while the account system holds the first call: E903 at once",
        steps=(
            ServerFault(hold_guids=("g1",)),
            Send("g1", background=True),
            WaitCalls("g1"),
            Send("g1"),
            Send("g1"),
            Release(("g1",)),
        ),
        covers=("3.e903",),
        claims=(SentWhileInFlight("g1", (4, 5)),),
    ),
    Scenario(
        "account-e500",
        family="basic",
        description="the account system answers E500: DONE, replayed, no retry",
        steps=(ServerFault(e500_guids=("g1",)), Send("g1"), Send("g1")),
        covers=("3.definite", "3.done-replay"),
        claims=(AccountAnswered("g1", "E500"),),
    ),
    Scenario(
        "account-b2xx",
        family="basic",
        description="insufficient funds and an unknown account: definite refusals, replayed",
        accounts={"alice": 50, "bob": 0},
        steps=(Send("g1", amount=500), Send("g2", dst="carol"), Send("g1", amount=500), Send("g3", amount=5)),
        covers=("3.definite", "3.done-replay"),
        claims=(AccountAnswered("g1", "B201"), AccountAnswered("g2", "B202")),
    ),
    Scenario(
        "guid-reused",
        family="basic",
        description="a GUID reused with a different amount or payee gets E904 and nothing is sent",
        steps=(
            Send("g1", amount=10),
            Send("g1", amount=11),
            Send("g1", amount=10, dst="alice", src="bob"),
            Send("g1", amount=10),
        ),
        covers=("3.e904",),
    ),
    Scenario(
        "malformed-requests",
        family="basic",
        description="malformed bodies get HTTP 400 E400, no ledger row and no account call; a body with an "
        "extra field may be refused (E400) or processed (contract v1.1)",
        steps=tuple(Send(f"m{i}", raw=body) for i, body in enumerate(MALFORMED))
        + (Send("x1", raw=EXTRA_FIELD), Send("g1")),
        covers=("3.malformed", "3.extra-fields"),
    ),
]
