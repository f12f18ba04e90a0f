"""What the stateful machine's draws depend on: the seed, and nothing a run's timing or history changes.

Hypothesis chooses its next examples partly by what earlier ones showed: its mutations and its target phase keep
the stories whose `target()` scores are highest. What an example showed (did a fault meet a transfer, how many
cells of the coverage grid it reached) depends on timing, so the machine reports no score: a rerun with the same
seed then draws the same stories.

Hypothesis also draws about one integer in twenty from the constants of the process's local modules (those
outside site-packages, as relaychaos is in a checkout) loaded so far: a module the harness imports lazily, or one
an earlier test imported, would change the stories a seed draws. `load_every_module()` loads every module of
relaychaos before the machine's first draw.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

import relaychaos


@functools.cache
def load_every_module() -> None:
    """Import every module of relaychaos (not its test files, conftest or __main__ modules), once a process."""
    for found in pkgutil.walk_packages(relaychaos.__path__, "relaychaos."):
        last = found.name.rsplit(".", 1)[-1]
        if not (last.startswith("test_") or last in ("conftest", "__main__")):
            importlib.import_module(found.name)
