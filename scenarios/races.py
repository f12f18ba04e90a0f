"""Scenarios for concurrent duplicates: many copies of one GUID at once, on one relay or two."""

from relaychaos.checkers.claims import SentWhileInFlight
from relaychaos.engine.steps import AwaitSends, Race, Release, Scenario, Send, ServerFault, Start, WaitCalls

# In race-pairs-two-relays each of eight transfers reaches the two relays in one turn of the channel's
# loop (copies on several relays are released together), and every file lock the relays take on the
# ledger is held 20 ms (relaychaos.sandbox.seccomp): a claim that is atomic only within one process (a
# lock of its own around check-then-insert) lets both relays read "no row", however short its own
# window is (on the sandbox's tmpfs a SELECT and the INSERT after it are microseconds apart; on slow
# shared storage, as here, they are a lock apart).
# In race-32-one-relay the account system takes 200 ms per call, so every copy reaches the relay
# while the first call is still in flight: a relay that checks the ledger only after calling meets
# all 32 copies there on every run, never a varying few, and no copy's call lands after another
# copy's answer was written (what makes regrades of broken relays stable: with instant calls,
# whether a check-then-insert relay also broke write-before-send varied from run to run).
# race-32-two-relays releases its 32 copies only once the first relay's call has reached the
# account system, where it is held: which relay claims is decided by the harness, never by a race
# between the relays (a relay whose claim is atomic only within its own process is caught by
# race-pairs-two-relays, which forces that interleaving; left to chance here, it was caught in some
# regrades and not in others), and a relay that keeps its claims in memory meets the copies on the
# other relay on every run.
# In the scenarios holding the first call while copies arrive, the relay's ACCOUNT_TIMEOUT_MS is 10 s: the
# held call is released only after every copy has its answer, so a relay waiting for the account system
# answers a copy only at its time-out (seconds), while one that did not wait answers within its own speed
# (a loaded JVM queueing 32 copies took 0.36 s for one; a Go service on PostgreSQL answering 64 copies on a
# loaded machine, 0.47 s): e903-at-once allows half the time left until the relay's time-out (the release comes
# only after the copies' answers, so it is no measure of waiting), so the two cannot be confused (with 2-5 s, the
# last copies of a slow relay had 0.55 s left and a 0.28 s limit). A keyed service whose duplicate waits for the
# key's owner to finish (payments_go's conflict_waits) answers its copies only at that time-out: caught here.
SCENARIOS = [
    Scenario(
        "race-32-one-relay",
        family="race",
        account_timeout_ms=2000,
        description="32 copies of one transfer released together on one relay, the first call slowed: one call",
        steps=(ServerFault(delay_ms=200), Race("g1", n=32), Race("g2", n=32, amount=7), Send("g1")),
        covers=("3.claim-new", "3.e903", "3.accept-wait", "4.readers"),
        claims=(SentWhileInFlight("g1", (2,), after_call=False), SentWhileInFlight("g2", (3,), after_call=False)),
    ),
    Scenario(
        "race-32-two-relays",
        family="race",
        relays=("a", "b"),
        account_timeout_ms=10000,
        description="a transfer claimed on one relay, then 32 copies split across both relays while its call is "
        "held at the account system; again with the claim on the other relay: one call each",
        steps=(
            ServerFault(hold_guids=("g1", "g2")),
            Send("g1", slot="a", background=True),
            WaitCalls("g1"),
            Race("g1", n=32, slots=("a", "b")),
            Release(("g1",)),
            Send("g2", amount=7, slot="b", background=True),
            WaitCalls("g2"),
            Race("g2", n=32, amount=7, slots=("a", "b")),
            Release(("g2",)),
            AwaitSends(),
            Send("g1", slot="b"),
        ),
        covers=("1.two-serves", "3.claim-new", "3.e903", "3.accept-wait"),
        claims=(SentWhileInFlight("g1", (4,)), SentWhileInFlight("g2", (8,))),
    ),
    Scenario(
        "race-pairs-two-relays",
        family="race",
        relays=("a", "b"),
        account_timeout_ms=2000,
        ledger_lock_delay_ms=20,
        description="eight transfers, each sent to both relays on one ledger at the same instant, the calls "
        "slowed and each file lock on the ledger held 20 ms (slow shared storage): one call each",
        steps=(ServerFault(delay_ms=200), *(Race(f"g{i}", n=2, amount=i, slots=("a", "b")) for i in range(1, 9))),
        covers=("1.two-serves", "3.claim-new"),
        claims=tuple(SentWhileInFlight(f"g{i}", (i + 1,), after_call=False) for i in range(1, 9)),
    ),
    Scenario(
        "race-while-held-two-relays",
        family="race",
        relays=("a", "b"),
        account_timeout_ms=10000,
        description="while the first call is held at the account system, duplicates reach both relays",
        steps=(
            ServerFault(hold_guids=("g1",)),
            Send("g1", background=True),
            WaitCalls("g1"),
            Race("g1", n=16, slots=("a", "b")),
            Release(("g1",)),
        ),
        covers=("1.two-serves", "3.e903"),
        claims=(SentWhileInFlight("g1", (4,)),),
    ),
    Scenario(
        "second-relay-joins",
        family="race",
        description="a second relay starts on the same ledger and serves resends of the first's GUIDs",
        steps=(Send("g1"), Start("b"), Send("g1", slot="b"), Send("g2", slot="b"), Send("g2")),
        covers=("1.two-serves", "3.done-replay"),
    ),
]
