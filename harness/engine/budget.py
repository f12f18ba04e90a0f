"""How hard the stateful machine searches: named budgets applied to the relaychaos test alone.

    budget_settings("nightly")  ->  hypothesis.settings for run_state_machine_as_test
    SHRINK_S["nightly"]         ->  seconds of shrinking a failure (relaychaos.engine.shrink_budget)

The plugin picks one from `--relaychaos-budget`, the ini value `relaychaos_budget`, or
RELAYCHAOS_BUDGET; without any, `ci` when the CI variable is set, else `quick`. No
Hypothesis profile is registered or loaded, so a project's own property tests keep
their settings whatever relaychaos does. Every budget stops generating at the first
failure (report_multiple_bugs=False: one bug is enough to stop a merge) and shrinks it
within its time budget, which `--shrink-s` (relaychaos.options) overrides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, Phase, settings

from relaychaos import options

# Phase.explain is left out: after shrinking it replays variants of the shortest story, each a real run,
# to comment on it, and the machine writes its own story. Phase.target is left out: the machine reports no
# target() score (relaychaos.scenarios.machine_draws).
SEARCH = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
BUDGETS: dict[str, dict] = {
    "quick": dict(max_examples=8, stateful_step_count=8, phases=SEARCH),  # local work
    "nightly": dict(max_examples=300, stateful_step_count=20, phases=SEARCH),  # a deeper search
    "ci": dict(max_examples=12, stateful_step_count=8, derandomize=True, database=None, print_blob=True, phases=SEARCH),
    # Grading: stories drawn from --relaychaos-seed and no example database. The grade counts the first
    # failing example as found, so a regrade is the same however far the shrinking got; the shrunk
    # story is what the student reads.
    "grade": dict(
        max_examples=12, stateful_step_count=8, database=None, phases=(Phase.explicit, Phase.generate, Phase.shrink)
    ),
}
COMMON: dict[str, Any] = dict(
    deadline=None,
    suppress_health_check=list(HealthCheck),  # every example is a real run
    report_multiple_bugs=False,
)
# Seconds of shrinking per failure, by budget. A CI run against a buggy relay ends within a minute on a
# two-core machine (docs/performance.md): the named scenarios take about 20 s, an example up to a few.
SHRINK_S: dict[str, float] = {"quick": 10.0, "ci": 10.0, "grade": 10.0, "nightly": 60.0}
if tuple(BUDGETS) != options.BUDGETS or set(SHRINK_S) != set(BUDGETS):  # the names are options.BUDGETS' alone
    raise ImportError(f"the budgets {tuple(BUDGETS)}, {tuple(SHRINK_S)} are not relaychaos.options.BUDGETS")


def default_budget(environ: Mapping[str, str] | None = None) -> str:
    """`ci` where the CI variable says so (relaychaos.options.CI), else `quick`."""
    return "ci" if options.environment(options.CI, default=False, environ=environ) else "quick"


def budget_settings(name: str) -> settings:
    """The Hypothesis settings of budget `name`; ValueError naming the budgets for an unknown one."""
    if name not in BUDGETS:
        raise ValueError(f"unknown relaychaos budget {name!r}: use one of {', '.join(BUDGETS)}")
    return settings(**COMMON, **BUDGETS[name])
