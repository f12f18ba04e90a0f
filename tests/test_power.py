"""The power check: the stateful machine, knowing nothing of the relay it faces, finds the bugs that
need an interleaving, and shrinks each to a scenario file of at most 10 steps that replays the verdict.

The budget here is one CI can afford: derandomized, so each run searches the same way; shrinking stops
after SHRINK_S seconds, as the harness's --shrink-s does (a story of at most 10 steps is what
stateful_step_count draws, and shrinking only makes it shorter). benchmarks/stateful_speed.py measures
the search at the nightly profile's budget.
"""

import time

import pytest
from hypothesis import HealthCheck, errors, settings
from hypothesis.stateful import run_state_machine_as_test

from relaychaos.engine import scenario_file
from relaychaos.engine.shrink_budget import ShrinkBudget
from relaychaos.relay_under_test.mutants.table import BY_NAME, MUTANTS
from relaychaos.scenarios.machine import ACCOUNTS, TIMEOUT_MS, bind
from relaychaos.scenarios.machine_context import Context

BUDGET = settings(
    max_examples=60,
    stateful_step_count=10,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)
SHRINK_S = 150.0
NEEDS_AN_INTERLEAVING = [m.name for m in MUTANTS if m.needs_interleaving]


@pytest.mark.parametrize("relay", NEEDS_AN_INTERLEAVING)
def test_the_machine_finds_the_bug_and_shrinks_it_to_a_short_file(make_stack, run_chaos, tmp_path, relay):
    path = BY_NAME[relay].manifest
    stack = make_stack(path, accounts=ACCOUNTS, account_timeout_ms=TIMEOUT_MS)
    ctx = Context(stack, tmp_path / "found", budget=ShrinkBudget(SHRINK_S))
    t0 = time.monotonic()
    with pytest.raises((AssertionError, errors.Flaky)):
        run_state_machine_as_test(bind(ctx), settings=BUDGET)
    took = time.monotonic() - t0
    assert ctx.first_failure_at is not None and ctx.last_file is not None
    found = scenario_file.load(ctx.last_file)
    print(
        f"{relay}: first failure at example {ctx.first_failure_at[0]} after {ctx.first_failure_at[1]:.1f} s; "
        f"{ctx.examples} examples in {took:.1f} s; shrunk to {len(found.scenario.steps)} steps"
    )
    assert len(found.scenario.steps) <= 10, ctx.last_file.read_text()
    replayed = run_chaos(found.scenario, manifest=path)
    assert not replayed.ok, "the written file replays the failure"
