"""Scenarios for network faults between the parts: dropped answers and requests, latency, resets, refusals."""

from relaychaos.checkers.claims import AnswerLost, CallDuringFault, NoCallDuringFault, Queried
from relaychaos.engine.steps import AddToxic, DisableProxy, EnableProxy, Heal, RemoveToxic, Scenario, Send

SCENARIOS = [
    Scenario(
        "dropped-response-downstream",
        family="fault",
        description="the account system's answer never reaches the relay: E901, resends get E901, resolve settles it",
        steps=(AddToxic("account", "timeout", attributes={"timeout": 0}), Send("g1", attempts=3), Heal(), Send("g1")),
        covers=("3.in-doubt", "3.unknown", "3.in-time", "5.resolve-asks", "5.resolve-found", "6.sandbox"),
        claims=(CallDuringFault("g1", step=1), Queried("g1", found=True)),
    ),
    Scenario(
        "dropped-response-to-channel",
        family="fault",
        description="the relay's answer never reaches the channel; the channel resends the same GUID",
        steps=(
            AddToxic("hub-a", "timeout", name="drop", attributes={"timeout": 0}),
            Send("g1", timeout_s=0.5),
            RemoveToxic("hub-a", "drop"),
            Send("g1"),
            Send("g1"),
        ),
        covers=("3.claim-new", "3.done-replay"),
        claims=(AnswerLost("g1", step=2),),
    ),
    Scenario(
        "dropped-request-upstream",
        family="fault",
        description="the request is cut on its way to the account system: E901 (in doubt), "
        "resolve finds it not found, reprocess sends it once",
        steps=(
            AddToxic("account", "limit_data", stream="upstream", attributes={"bytes": 16}),
            Send("g1", attempts=2),
            Heal(),
        ),
        covers=("3.in-doubt", "5.resolve-404", "5.reprocess"),
        claims=(NoCallDuringFault("g1", step=1), Queried("g1", found=False)),
    ),
    Scenario(
        "latency-beyond-timeout",
        family="fault",
        description="the account system answers after the relay's time-out: E901 while the debit was applied",
        steps=(AddToxic("account", "latency", attributes={"latency": 700}), Send("g1", attempts=2), Heal(), Send("g1")),
        covers=("3.in-doubt", "3.unknown", "3.in-time"),
        claims=(CallDuringFault("g1", step=1),),
    ),
    Scenario(
        "reset-after-request-sent",
        family="fault",
        description="the connection breaks after the request went out: E901, never resent blindly",
        steps=(AddToxic("account", "limit_data", attributes={"bytes": 1}), Send("g1", attempts=3), Heal(), Send("g1")),
        covers=("3.in-doubt", "3.unknown"),
        claims=(CallDuringFault("g1", step=1),),
    ),
    Scenario(
        "proxy-down-refused",
        family="fault",
        description="the account system's address refuses connections: E902, FAILED, and the channel's "
        "retry after it comes back sends it once",
        steps=(DisableProxy("account"), Send("g1"), Send("g2", amount=20), EnableProxy("account"), Send("g1")),
        covers=("3.refused", "3.failed-resend"),
        claims=(NoCallDuringFault("g1", step=1), NoCallDuringFault("g2", step=1)),
    ),
]
