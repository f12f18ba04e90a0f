"""The stateful machine against the relay under test: random stories, every rule checked.

Its budget is relaychaos' own (`--relaychaos-budget quick|nightly|ci`; quick by default, ci
when CI is set), applied to this test alone. It prints how often each step and fault ran
(`pytest -rP` shows it for a passing run).
"""
import pytest
from hypothesis.stateful import run_state_machine_as_test

from relaychaos.scenarios.machine import ACCOUNTS, TIMEOUT_MS, Context, bind, found_dir


@pytest.mark.stateful
def test_random_stories_keep_every_rule(make_stack, relaychaos_budget):
    stack = make_stack(accounts=ACCOUNTS, account_timeout_ms=TIMEOUT_MS)
    context = Context(stack, found_dir())
    try:
        run_state_machine_as_test(bind(context), settings=relaychaos_budget)
    finally:
        print(context.statistics())
