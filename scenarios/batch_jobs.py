"""Scenarios for the batch jobs: resolve's min-age, reprocess's claim and cap, purge's retention."""

from relaychaos.engine.steps import (
    AddToxic,
    DisableProxy,
    EnableProxy,
    Heal,
    Purge,
    Release,
    RemoveToxic,
    Reprocess,
    Resolve,
    Scenario,
    Send,
    ServerFault,
    Wait,
    WaitCalls,
)

SCENARIOS = [
    Scenario(
        "min-age-trap",
        family="batch",
        description="a request still held at the account system when resolve runs: a resolve honouring "
        "--min-age leaves it alone, so reprocess cannot resend it",
        steps=(
            ServerFault(hold_guids=("g1",)),
            Send("g1"),
            WaitCalls("g1"),
            Resolve(min_age_s=5),
            Reprocess(max_attempts=3),
            Release(("g1",)),
        ),
        covers=("5.resolve-min-age", "1.batch-exit"),
    ),
    Scenario(
        "reprocess-only-failed",
        family="batch",
        description="reprocess resends the FAILED GUID and leaves the UNKNOWN one alone",
        steps=(
            DisableProxy("account"),
            Send("f1"),
            EnableProxy("account"),
            AddToxic("account", "timeout", attributes={"timeout": 0}),
            Send("u1"),
            Heal(),
            Reprocess(max_attempts=3),
            Send("u1"),
            Send("f1"),
        ),
        covers=("5.reprocess-not-unknown",),
    ),
    Scenario(
        "reprocess-same-guid",
        family="batch",
        description="reprocess resends FAILED rows with their own GUIDs",
        steps=(
            DisableProxy("account"),
            Send("f1"),
            Send("f2", amount=3),
            EnableProxy("account"),
            Reprocess(max_attempts=3),
        ),
        covers=("5.reprocess", "1.batch-exit"),
    ),
    Scenario(
        "reprocess-attempt-cap",
        family="batch",
        max_attempts=2,
        description="with the account system unreachable, reprocess --max-attempts 2 stops at two attempts",
        steps=(
            DisableProxy("account"),
            Send("f1"),
            Reprocess(max_attempts=2),
            Reprocess(max_attempts=2),
            Reprocess(max_attempts=2),
        ),
        covers=("5.reprocess",),
    ),
    Scenario(
        "two-reprocess-runs-at-once",
        family="batch",
        description="two reprocess runs over the same FAILED rows send each GUID once",
        steps=(DisableProxy("account"),)
        + tuple(Send(f"f{i}", amount=i + 1) for i in range(8))
        + (
            EnableProxy("account"),
            AddToxic("account", "latency", attributes={"latency": 30}),
            Reprocess(max_attempts=3, parallel=2),
        ),
        covers=("5.reprocess-races",),
    ),
    Scenario(
        "reprocess-races-channel-resend",
        family="batch",
        account_timeout_ms=2000,
        description="the channel resends a FAILED GUID (held at the account system) while reprocess runs",
        steps=(
            DisableProxy("account"),
            Send("f1"),
            EnableProxy("account"),
            ServerFault(hold_guids=("f1",)),
            Send("f1", background=True),
            WaitCalls("f1"),
            Reprocess(max_attempts=3),
            Release(("f1",)),
        ),
        covers=("5.reprocess-races",),
    ),
    # Retention 2 s: the fresh row stays young enough to be kept however late purge starts (a JVM
    # under load took 0.6 s), so a purge ignoring retention is caught on every run, and a correct
    # one is never pushed into deleting it (a resend after that would be a new transfer).
    Scenario(
        "purge-retention",
        family="batch",
        description="purge --retention 2 deletes the old DONE row and keeps the fresh one",
        steps=(Send("old"), Wait(2.6), Send("fresh"), Purge(retention_s=2.0), Send("fresh")),
        covers=("5.purge", "1.batch-exit"),
    ),
    Scenario(
        "purge-keeps-undecided",
        family="batch",
        description="purge never deletes UNKNOWN or FAILED rows, however old",
        steps=(
            AddToxic("account", "timeout", attributes={"timeout": 0}),
            Send("u1"),
            Heal(),
            DisableProxy("account"),
            Send("f1"),
            EnableProxy("account"),
            Wait(0.3),
            Purge(retention_s=0.1),
            Send("u1"),
        ),
        covers=("5.purge-keeps",),
    ),
    Scenario(
        "resolve-query-fails",
        family="batch",
        description="resolve runs while the query API cannot answer (the account proxy down, then every answer "
        "held): the UNKNOWN row stays as it is until a query answers",
        steps=(
            AddToxic("account", "timeout", name="drop-answer", attributes={"timeout": 0}),
            Send("u1"),
            RemoveToxic("account", "drop-answer"),
            DisableProxy("account"),
            Wait(0.6),
            Resolve(min_age_s=0.5),
            EnableProxy("account"),
            AddToxic("account", "timeout", name="hold-query", attributes={"timeout": 0}),
            Resolve(min_age_s=0.5),
            Heal(),
            Send("u1"),
        ),
        covers=("5.resolve-query-fails",),
    ),
]
