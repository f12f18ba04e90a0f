"""Scenarios where the relay is SIGKILLed mid-transfer and started again on the same ledger."""

from relaychaos.checkers.claims import KilledAfterCall, KilledBeforeCall, Queried
from relaychaos.engine.steps import AddToxic, Heal, Kill, RemoveToxic, Scenario, Send, Start, WaitCalls, WaitRow

SCENARIOS = [
    Scenario(
        "kill-before-account-call",
        family="crash",
        account_timeout_ms=1000,
        description="the relay dies after claiming the GUID, before its request reached the account "
        "system; restarted, the resend gets E903 and resolve settles the orphan (the query answers 404)",
        # a timeout toxic of 0 on the way up discards what the relay sends (a latency toxic would hold the
        # request and deliver it when removed, after the kill, and resolve would find it)
        steps=(
            AddToxic("account", "timeout", stream="upstream", name="slow", attributes={"timeout": 0}),
            Send("g1", background=True),
            WaitRow("g1", "SENT"),
            Kill(),
            RemoveToxic("account", "slow"),
            Start(),
            Send("g1"),
        ),
        covers=("1.sigkill", "5.resolve-asks", "5.resolve-404"),
        claims=(KilledBeforeCall("g1", step=4), Queried("g1", found=False)),
    ),
    Scenario(
        "kill-after-applied-before-done",
        family="crash",
        account_timeout_ms=1000,
        description="the account system applied the debit but the relay dies before writing DONE; "
        "restarted, a resend must not send it again",
        # the answer is held by a latency far past ACCOUNT_TIMEOUT_MS, not a timeout toxic: that one ends
        # the relay's connection at once when the account system closes its side after answering
        # (a relay sending `Connection: close`), and the relay would write UNKNOWN before the kill
        steps=(
            AddToxic("account", "latency", name="hold-answer", attributes={"latency": 10000}),
            Send("g1", background=True),
            WaitCalls("g1"),
            Kill(),
            Heal(),
            Start(),
            Send("g1"),
            Send("g1"),
        ),
        covers=("1.sigkill", "5.resolve-asks", "5.resolve-found"),
        claims=(KilledAfterCall("g1", step=4), Queried("g1", found=True)),
    ),
    Scenario(
        "restart-keeps-the-ledger",
        family="crash",
        description="after a clean transfer and a restart, resends are answered from the ledger",
        steps=(Send("g1"), Kill(), Start(), Send("g1"), Send("g2")),
        covers=("1.sigkill",),
    ),
]
