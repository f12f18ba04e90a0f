"""How hard the stateful machine searches: named budgets applied to the relaychaos test alone.

    budget_settings("nightly")  ->  hypothesis.settings for run_state_machine_as_test

The plugin picks one from `--relaychaos-budget`, the ini value `relaychaos_budget`, or
RELAYCHAOS_BUDGET; without any, `ci` when the CI variable is set, else `quick`. No
Hypothesis profile is registered or loaded, so a project's own property tests keep
their settings whatever relaychaos does.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from hypothesis import HealthCheck, Phase, settings
from hypothesis.internal.conjecture import engine as _engine

BUDGETS: dict[str, dict] = {
    "quick": dict(max_examples=8, stateful_step_count=8),  # local work
    "nightly": dict(max_examples=300, stateful_step_count=20),  # a deeper search
    "ci": dict(max_examples=12, stateful_step_count=8, derandomize=True, database=None, print_blob=True),
    # Grading: stories drawn from --relaychaos-seed and no example database; shrinking within a time
    # budget (SHRINK_S). The grade counts the first failing example as found, so a regrade is the same
    # however far the shrinking got; the shrunk story is what the student reads.
    "grade": dict(max_examples=12, stateful_step_count=8, database=None,
                  phases=(Phase.explicit, Phase.generate, Phase.shrink)),
}
COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck))  # every example is a real run
# Seconds of shrinking per failure, by budget; budgets not named here keep Hypothesis's own limit (300 s).
SHRINK_S: dict[str, float] = {"grade": 10.0}


def default_budget(environ=os.environ) -> str:
    """`ci` where the CI variable says so (any value but empty, 0, false), else `quick`."""
    return "ci" if environ.get("CI", "").strip().lower() not in ("", "0", "false", "no") else "quick"


@contextmanager
def shrink_time_limit(seconds: float | None) -> Iterator[None]:
    """Within the block, Hypothesis stops shrinking a failure after `seconds` (None: its own limit).

    Past the limit the failing example is reported as it stood. Hypothesis reads this limit from a
    module constant it documents as monkeypatchable (engine.MAX_SHRINKING_SECONDS); this is the one
    place relaychaos sets it, and it is restored on leaving.
    """
    if seconds is None:
        yield
        return
    before = _engine.MAX_SHRINKING_SECONDS
    _engine.MAX_SHRINKING_SECONDS = seconds
    try:
        yield
    finally:
        _engine.MAX_SHRINKING_SECONDS = before


def budget_settings(name: str) -> settings:
    """The Hypothesis settings of budget `name`; ValueError naming the budgets for an unknown one."""
    if name not in BUDGETS:
        raise ValueError(f"unknown relaychaos budget {name!r}: use one of {', '.join(BUDGETS)}")
    return settings(**COMMON, **BUDGETS[name])
