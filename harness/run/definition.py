"""The run definition: what one run was asked for, built once and handed to every part of it (Jepsen's test map).

    run = RunDefinition.build({"relay": "my/relay.toml", "sandbox": None, ...})   # a command's parsed values
    run = RunDefinition.build(pytest_values(config))                               # the pytest plugin's

Each value is resolved by relaychaos.options (the command line, else the ini file, else the
environment, else the default) and the relay's relay.toml is loaded and checked here, each of its
commands' programs found where it will run, so that a bad value or a bad manifest stops the run
before anything starts. Below this value no part picks
a default of its own: the services, the stacks and the supervisor are given the sandbox level
the definition holds (auto unless asked otherwise), never a weaker one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from relaychaos import options, paths
from relaychaos.engine.budget import default_budget
from relaychaos.sandbox.environment import commands_path
from relaychaos.sandbox.levels import Limits
from relaychaos.stack import manifest as manifests
from relaychaos.stack.api_profile import Profile
from relaychaos.stack.manifest import Manifest


@dataclasses.dataclass(frozen=True)
class RunDefinition:
    """One run: the relay under test and every setting its commands read (immutable)."""

    relay: Manifest  # the relay.toml under test, loaded and checked
    sandbox: str  # auto, strict or off (relaychaos.options.SANDBOX_MODES)
    limits: Limits  # the sandbox's limits, overrides applied
    budget: str  # the state machine's budget (relaychaos.engine.budget.BUDGETS)
    seed: int | None = None  # the state machine's seed, or None: the budget decides
    hunt: bool = False  # random stories even after a named scenario has shown a bug
    shrink_s: float | None = None  # seconds of shrinking a failing story, or None: the budget's
    scenario_sets: tuple[tuple[str, Path], ...] = ()  # (set, file) of every extra scenario file
    sandbox_limit: str | None = None  # the overrides as given (NAME=N,...), passed on to child runs

    @property
    def profile(self) -> Profile:
        """How the relay is spoken to: the course contract, or a keyed service's API ([api], [downstream])."""
        return self.relay.profile

    @classmethod
    def build(
        cls,
        given: Mapping[str, object],
        *,
        scenario_sets: tuple[tuple[str, Path], ...] = (),
        environ: Mapping[str, str] | None = None,
    ) -> RunDefinition:
        """From values given on a command line or by pytest (by option name; None: not given), each resolved
        through relaychaos.options; ValueError naming the source and the fix for a bad value, ManifestError
        for a bad relay.toml."""

        def value(option: options.Option, default: object = None) -> object:
            return options.resolve(option, given.get(option.name), environ=environ, default=default)

        relay = value(options.RELAY)
        limit = value(options.SANDBOX_LIMIT)
        sandbox = str(value(options.SANDBOX))  # auto unless asked: relaychaos.options.SANDBOX
        loaded = manifests.load(Path(str(relay)) if relay else paths.reference_relay())
        on = sandbox != "off"
        manifests.runnable(loaded, commands_path(on=on), sandboxed=on)  # each command's program, before anything starts
        return cls(
            relay=loaded,
            sandbox=sandbox,
            limits=Limits().with_overrides(str(limit) if limit else None),
            budget=str(value(options.BUDGET) or default_budget(environ)),
            seed=_int_or_none(value(options.SEED)),
            hunt=bool(value(options.HUNT)),
            shrink_s=_float_or_none(value(options.SHRINK_S)),
            scenario_sets=scenario_sets,
            sandbox_limit=str(limit) if limit else None,
        )


def _int_or_none(value: object) -> int | None:
    return None if value is None else int(str(value))


def _float_or_none(value: object) -> float | None:
    return None if value is None else float(str(value))
