"""The stateful machine against the relay under test: random stories, every rule checked.

Its budget is relaychaos' own (`--relaychaos-budget quick|nightly|ci`; quick by default, ci
when CI is set), applied to this test alone. `--hypothesis-show-statistics` shows how often
each step and fault ran.
"""
import pytest
from hypothesis.stateful import run_state_machine_as_test

from relaychaos.scenarios.machine import ACCOUNTS, TIMEOUT_MS, Context, bind, found_dir


@pytest.mark.stateful
def test_random_stories_keep_every_rule(make_stack, relaychaos_budget):
    stack = make_stack(accounts=ACCOUNTS, account_timeout_ms=TIMEOUT_MS)
    run_state_machine_as_test(bind(Context(stack, found_dir())), settings=relaychaos_budget)


# Let Hypothesis' pytest plugin treat this as one of its tests, so that --hypothesis-show-statistics
# reports the machine's steps and faults (as it does for RuleBasedStateMachine.TestCase).
test_random_stories_keep_every_rule.is_hypothesis_test = True
