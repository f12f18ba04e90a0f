"""The soak's nemesis schedule: which fault when, and the batch commands' cadence, drawn from one seed.

    schedule = draw(seed=7, duration_s=600, account_timeout_ms=300)

Pure: the same seed, duration and time-out give the same schedule (the run's
timing does not enter). Faults come one at a time, in rounds: each round is the
whole catalogue in a seeded order, each fault held a few seconds and then
healed, with a quiet gap after it, so every fault is met within the first
minute. A second relay joins once, early; after it has, SIGKILL picks either
slot. resolve, reprocess and purge run on a cron-like cadence of their own.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable
from dataclasses import dataclass

from relaychaos.engine import steps as S
from relaychaos.engine.final_phase import safe_min_age_s as _safe_min_age_s

# Each batch run is followed by a ledger snapshot, the size of the ledger: these cadences and the retention
# keep a soak's snapshots to tens per ten minutes of a few tens of thousands of rows (shorter soaks run
# them more often: at least three times each).
RESOLVE_EVERY_S = 30.0
REPROCESS_EVERY_S = 45.0
PURGE_EVERY_S = 30.0
RETENTION_S = 10.0  # twice the generator's resend window: a purged GUID is never resent
MAX_ATTEMPTS = 3
HOLD_S = (2.0, 4.0)  # how long a fault stays in force
GAP_S = (1.0, 2.5)  # quiet time after each heal
JOIN_WITHIN_S = (4.0, 12.0)  # when the second relay joins


# Faults on the account side fix the answer of a call started while they are in force (E901, E902). A fault
# is recorded as begun just before it is in place and as healed just after it is gone, and a call started
# shortly before a heal may still get the account system's answer once the fault is lifted. So the
# generator holds new calls from a guard before such a fault's start (START_GUARD_S) and heal (ACCOUNT_TIMEOUT_MS
# + HEAL_GUARD_EXTRA_S) until the nemesis has done it: every answer's situation is then fixed.
ACCOUNT_SIDE = ("drop-answers", "drop-requests", "latency-beyond-timeout", "account-resets", "account-down")
START_GUARD_S = 0.1
HEAL_GUARD_EXTRA_S = 0.2


@dataclass(frozen=True)
class Action:
    """Steps to do at `at` seconds into the soak; `fault` names the fault they start or heal ('' for cron).

    `guard_s`: the generator starts no call from this long before the action until it is done.
    """

    at: float
    kind: str  # "fault", "heal", "join" or "cron"
    fault: str
    steps: tuple
    guard_s: float = 0.0


@dataclass(frozen=True)
class Schedule:
    """The nemesis's actions and the cron's batch runs, each in time order."""

    seed: int
    duration_s: float
    nemesis: tuple[Action, ...]
    cron: tuple[Action, ...]

    def steps(self) -> tuple:
        """Every step the schedule may do, in time order (the scenario header and the safe --min-age use it)."""
        return tuple(s for a in sorted(self.nemesis + self.cron, key=lambda a: a.at) for s in a.steps)

    def faults(self) -> list[str]:
        return [a.fault for a in self.nemesis if a.kind == "fault"]

    def for_commands(self, commands: Iterable[str]) -> Schedule:
        """The schedule for a relay that has these commands: no cron run of a batch command it lacks (a keyed
        service may have resolve alone, or none)."""
        have = set(commands)
        return dataclasses.replace(self, cron=tuple(a for a in self.cron if S.kind(a.steps[0]) in have))


def catalogue(account_timeout_ms: int, slot: str = "a") -> dict[str, tuple[tuple, tuple]]:
    """Each fault by name: (the steps that start it, the steps that heal it), from the step catalogue."""
    beyond_ms = account_timeout_ms + 300  # latency the relay's time-out cannot wait out
    hub = f"hub-{slot}"
    heal = (S.Heal(),)
    return {
        "drop-answers": ((S.AddToxic("account", "timeout", "downstream", "soak_drop", {"timeout": 0}),), heal),
        # cut after 16 bytes: a held request (a timeout toxic) would reach the account system at the heal
        "drop-requests": ((S.AddToxic("account", "limit_data", "upstream", "soak_drop", {"bytes": 16}),), heal),
        "latency-beyond-timeout": (
            (S.AddToxic("account", "latency", "downstream", "soak_latency", {"latency": beyond_ms}),),
            heal,
        ),
        "account-resets": ((S.AddToxic("account", "reset_peer", "downstream", "soak_reset", {"timeout": 0}),), heal),
        "account-down": ((S.DisableProxy("account"),), heal),
        "e500-burst": ((S.ServerFault(e500_next=40),), heal),
        "channel-drops": ((S.AddToxic(hub, "timeout", "downstream", "soak_drop", {"timeout": 0}),), heal),
        "channel-resets": ((S.AddToxic(hub, "reset_peer", "downstream", "soak_reset", {"timeout": 0}),), heal),
        "relay-down": ((S.DisableProxy(hub),), heal),
        "sigkill": ((S.Kill(slot),), (S.Start(slot),)),
    }


def draw(seed: int, duration_s: float, account_timeout_ms: int) -> Schedule:
    """The schedule for a soak of duration_s seconds (see the module doc)."""
    rng = random.Random(seed)
    join_at = round(rng.uniform(*JOIN_WITHIN_S), 3)
    nemesis: list[Action] = [Action(join_at, "join", "second-relay", (S.Start("b"),))]
    t = round(rng.uniform(*GAP_S), 3)
    while t < duration_s:
        for name in rng.sample(sorted(catalogue(account_timeout_ms)), k=len(catalogue(account_timeout_ms))):
            if t >= duration_s:
                break
            slot = rng.choice(("a", "b")) if t > join_at else "a"
            start, heal = catalogue(account_timeout_ms, slot)[name]
            hold = round(rng.uniform(*HOLD_S), 3)
            guarded = name in ACCOUNT_SIDE
            nemesis.append(Action(t, "fault", name, start, START_GUARD_S if guarded else 0.0))
            nemesis.append(
                Action(
                    round(t + hold, 3),
                    "heal",
                    name,
                    heal,
                    account_timeout_ms / 1000 + HEAL_GUARD_EXTRA_S if guarded else 0.0,
                )
            )
            t = round(t + hold + rng.uniform(*GAP_S), 3)
    min_age = safe_min_age_s(account_timeout_ms, [s for a in nemesis for s in a.steps])
    cron: list[Action] = []
    for every, step in (
        (RESOLVE_EVERY_S, S.Resolve(min_age)),
        (REPROCESS_EVERY_S, S.Reprocess(MAX_ATTEMPTS)),
        (PURGE_EVERY_S, S.Purge(RETENTION_S)),
    ):
        every = min(every, max(duration_s / 3, 3.0))
        at = round(rng.uniform(0.3, 1.0) * every, 3)
        while at < duration_s:
            cron.append(Action(at, "cron", "", (step,)))
            at = round(at + every, 3)
    return Schedule(
        seed, duration_s, tuple(sorted(nemesis, key=lambda a: a.at)), tuple(sorted(cron, key=lambda a: a.at))
    )


def safe_min_age_s(account_timeout_ms: int, steps: list) -> float:
    """The --min-age the contract calls safe for these steps (see engine.final_phase.safe_min_age_s)."""
    return _safe_min_age_s(S.Scenario("soak", tuple(steps), account_timeout_ms=account_timeout_ms))
