"""How hard the stateful machine searches: named budgets applied to the relaychaos test alone.

    budget_settings("nightly")  ->  hypothesis.settings for run_state_machine_as_test

The plugin picks one from `--relaychaos-budget`, the ini value `relaychaos_budget`, or
RELAYCHAOS_BUDGET; without any, `ci` when the CI variable is set, else `quick`. No
Hypothesis profile is registered or loaded, so a project's own property tests keep
their settings whatever relaychaos does.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

BUDGETS: dict[str, dict] = {
    "quick": dict(max_examples=8, stateful_step_count=8),  # local work
    "nightly": dict(max_examples=300, stateful_step_count=20),  # a deeper search
    "ci": dict(max_examples=12, stateful_step_count=8, derandomize=True, database=None, print_blob=True),
    # Grading: stories drawn from --relaychaos-seed, no example database, and no shrinking: the first
    # failing example is reported as found, so that a grade takes seconds and every regrade is the same.
    "grade": dict(max_examples=12, stateful_step_count=8, database=None, phases=(Phase.explicit, Phase.generate)),
}
COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck))  # every example is a real run


def default_budget(environ=os.environ) -> str:
    """`ci` where the CI variable says so (any value but empty, 0, false), else `quick`."""
    return "ci" if environ.get("CI", "").strip().lower() not in ("", "0", "false", "no") else "quick"


def budget_settings(name: str) -> settings:
    """The Hypothesis settings of budget `name`; ValueError naming the budgets for an unknown one."""
    if name not in BUDGETS:
        raise ValueError(f"unknown relaychaos budget {name!r}: use one of {', '.join(BUDGETS)}")
    return settings(**COMMON, **BUDGETS[name])
