"""Delta debugging of a story against the relay that reproduces it: the fewest steps that still break the rules.

    small, tried = ddmin(steps, reproduces, budget=Budget(runs=80, seconds=300))

`reproduces(candidate)` replays a candidate (a list of Planned steps) on the relay and says whether every expected
rule still broke for every expected GUID; a candidate that is not a valid scenario (a toxic removed that was never
added, a send to a relay that is down) is not run and counts as not reproducing. ddmin (Zeller and Hildebrandt)
removes chunks of the list, halving the chunk size when no chunk can go, until no single step can be removed or the
budget of runs or seconds is spent (the smallest reproducing candidate found so far is kept). A candidate `admits`
refuses (one that cannot give production's answers) is not run either. A background send and the wait_calls after
it, and a pace with its races, are removed together (units). Each candidate is tried once here; the import replays
the result again (three times on the relay, once on each relay it must hold on) before it keeps it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.errors import HarnessError
from relaychaos.incidents.faults import Planned


@dataclass
class Budget:
    runs: int = 80
    seconds: float = 300.0


@dataclass
class Tried:
    """What the shrink did: replays run, candidates refused as invalid, and whether the budget ran out."""

    runs: int = 0
    invalid: int = 0
    refused: int = 0  # valid candidates `admits` refused, not run
    out_of_budget: bool = False
    seconds: float = 0.0


def _valid(steps: list[Planned], relays: tuple[str, ...]) -> bool:
    try:
        scenario_file.check([p.step for p in steps], relays)
    except HarnessError:
        return False
    return bool(steps)


def ddmin(
    steps: list[Planned],
    reproduces: Callable[[list[Planned]], bool],
    relays: tuple[str, ...],
    budget: Budget | None = None,
    admits: Callable[[list[Planned]], bool] | None = None,
) -> tuple[list[Planned], Tried]:
    """The smallest reproducing list of steps found (see the module doc), and what it took."""
    budget, tried, started = budget or Budget(), Tried(), time.monotonic()
    cache: dict[tuple[int, ...], bool] = {}
    units = _units(steps)

    def test(kept: list[int]) -> bool:
        key = tuple(kept)
        if key not in cache:
            candidate = [steps[i] for u in kept for i in units[u]]
            if not _valid(candidate, relays):
                tried.invalid += 1
                cache[key] = False
            elif admits is not None and not admits(candidate):
                tried.refused += 1
                cache[key] = False
            elif tried.runs >= budget.runs or time.monotonic() - started > budget.seconds:
                tried.out_of_budget = True
                return False
            else:
                tried.runs += 1
                cache[key] = reproduces(candidate)
        return cache[key]

    current, n = list(range(len(units))), 2
    while len(current) >= 2 and not tried.out_of_budget:
        size = -(-len(current) // n)
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        for chunk in chunks:
            rest = [i for i in current if i not in chunk]
            if rest and test(rest):
                current, n = rest, max(n - 1, 2)
                break
        else:
            if n >= len(current):
                break
            n = min(2 * n, len(current))
    tried.seconds = time.monotonic() - started
    return [steps[i] for u in current for i in units[u]], tried


def _units(steps: list[Planned]) -> list[list[int]]:
    """Step indices in the units ddmin removes whole: a background send with the wait_calls that follows it
    (the wait is what makes the next step find the call at the account system, on every run), and the account
    system's pace with the races inside it (the pace keeps every copy in flight together, so a race breaks the
    same rules on every run)."""
    units: list[list[int]] = []
    paced = False
    for i, p in enumerate(steps):
        step, prev = p.step, steps[units[-1][-1]].step if units else None
        if paced or (
            isinstance(step, S.WaitCalls) and isinstance(prev, S.Send) and prev.background and prev.guid == step.guid
        ):
            units[-1].append(i)
        else:
            units.append([i])
        if isinstance(step, S.ServerFault) and step.delay_ms is not None and not step.hold_guids:
            paced = bool(step.delay_ms)
    return units
