"""The power check: the stateful machine, knowing nothing of the relay it faces, finds each bug that needs an
interleaving and writes a scenario file that replays the verdict; given the time, shrinking cuts a found story to
at most 10 steps.

The search's budget is one CI can afford, derandomized, so each run searches the same way. Finding is shown
without shrinking (the file written is the first failing story as found); shrinking to a short file is the same
code whatever the relay, so it is shown once, on a relay whose failures replay the same way every time, with
SHRINK_S seconds (the harness's --shrink-s); tests/test_shrink_budget.py shows the CI budget's cut (past it, the
failing story found so far is written). benchmarks/stateful_speed.py measures the search and the shrinking at the
nightly profile's budget on every one of these relays.
"""

import time

import pytest
from hypothesis import HealthCheck, Phase, errors, settings
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
FIND = settings(BUDGET, phases=(Phase.explicit, Phase.generate))  # the first failing story, as found
SHRINK_S = 150.0
NEEDS_AN_INTERLEAVING = [m.name for m in MUTANTS if m.needs_interleaving]
SHRUNK_ON = "write_after_call"  # its failures replay the same way every time: shrinking runs to its end


def hunt(make_stack, tmp_path, relay: str, shrink_s: float | None, budget: settings) -> scenario_file.ScenarioFile:
    """Run the machine against relay until it fails; the scenario file it wrote."""
    path = BY_NAME[relay].manifest
    stack = make_stack(path, accounts=ACCOUNTS, account_timeout_ms=TIMEOUT_MS)
    ctx = Context(stack, tmp_path / "found", budget=ShrinkBudget(shrink_s))
    t0 = time.monotonic()
    with pytest.raises((AssertionError, errors.Flaky)):
        run_state_machine_as_test(bind(ctx), settings=budget)
    took = time.monotonic() - t0
    assert ctx.first_failure_at is not None and ctx.last_file is not None
    found = scenario_file.load(ctx.last_file)
    print(
        f"{relay}: first failure at example {ctx.first_failure_at[0]} after {ctx.first_failure_at[1]:.1f} s; "
        f"{ctx.examples} examples in {took:.1f} s; the file written has {len(found.scenario.steps)} steps"
    )
    return found


@pytest.mark.parametrize("relay", NEEDS_AN_INTERLEAVING)
def test_the_machine_finds_the_bug_and_writes_a_file_that_replays_it(make_stack, run_chaos, tmp_path, relay):
    found = hunt(make_stack, tmp_path, relay, None, FIND)
    replayed = run_chaos(found.scenario, manifest=BY_NAME[relay].manifest)
    assert not replayed.ok, "the written file replays the failure"


def test_given_the_time_shrinking_cuts_the_story_to_at_most_10_steps_that_still_fail(make_stack, run_chaos, tmp_path):
    found = hunt(make_stack, tmp_path, SHRUNK_ON, SHRINK_S, BUDGET)
    assert len(found.scenario.steps) <= 10, scenario_file.dump(found.scenario)
    replayed = run_chaos(found.scenario, manifest=BY_NAME[SHRUNK_ON].manifest)
    assert not replayed.ok, "the shrunk file replays the failure"
