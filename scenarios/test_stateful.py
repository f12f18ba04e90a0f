"""The stateful machine against the relay under test: random stories, every rule checked.

Its budget is relaychaos' own (`--relaychaos-budget quick|nightly|ci|grade`; quick by default,
ci when CI is set), applied to this test alone; `--relaychaos-seed N` draws its stories from
seed N, the same on every run. It prints how often each step and fault ran (`pytest -rP`
shows it for a passing run). The verdicts of the first failing example, as found (before
any shrinking), go into the run's results, and its history, as judged, is kept in the run
folder (the last example's when none failed); shrinking stops after `--relaychaos-shrink-s`
(10 s in the grade budget), and the results say whether it got to the end.
"""
import json

import pytest
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import get_state_machine_test

from relaychaos.engine.budget import shrink_time_limit
from relaychaos.scenarios.machine import ACCOUNTS, TIMEOUT_MS, Context, bind, found_dir


@pytest.mark.stateful
def test_random_stories_keep_every_rule(request, make_stack, relaychaos_budget, relaychaos_seed,
                                        relaychaos_shrink_s, relaychaos_keep):
    stack = make_stack(accounts=ACCOUNTS, account_timeout_ms=TIMEOUT_MS)
    context = Context(stack, found_dir())
    test = get_state_machine_test(bind(context), settings=relaychaos_budget)
    if relaychaos_seed is not None:
        test = hypothesis_seed(relaychaos_seed)(test)
    try:
        with shrink_time_limit(relaychaos_shrink_s):
            test()
    finally:
        print(context.statistics())
        kept = context.first_history or context.last_history
        if kept is not None:
            relaychaos_keep(kept, "stateful", stack)
        request.node.user_properties.append(("relaychaos_verdicts", json.dumps(context.first_verdicts)))
        request.node.user_properties.append(("relaychaos_stateful", json.dumps({
            "examples": context.examples, "seed": relaychaos_seed, "first_report": context.first_report,
            "last_report": context.last_report,
            **context.shrinking(relaychaos_budget, relaychaos_shrink_s)})))
