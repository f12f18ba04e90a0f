"""What a pytest run was asked for, each resolved through relaychaos.options: relay, budget, sandbox, run folder.

Every value is its command-line option, else its ini value, else its environment variable,
else the default; a bad value stops the run with a usage error naming where it came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from relaychaos import options

if TYPE_CHECKING:
    from relaychaos.run.definition import RunDefinition


def value(config: pytest.Config, option: options.Option, default: object = None) -> Any:
    """The option's value in this run (of the type its parse gives: Any); a bad one is a usage error naming where it
    came from and the fix."""
    try:
        return options.from_pytest(config, option, default=default)
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None


def definition(config: pytest.Config) -> RunDefinition:
    """The run definition of this pytest run: every option resolved here (flag, ini, environment, default), the
    relay's manifest loaded, the extra scenario files listed; a bad value is a usage error."""
    from relaychaos.run.definition import RunDefinition  # lazy (relaychaos.plugin)

    given = {o.name: value(config, o) for o in options.OPTIONS}
    try:
        return RunDefinition.build(given, scenario_sets=tuple(extra_scenario_files(config)))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None


def relay_path(config: pytest.Config) -> Path:
    """The relay under test's manifest: --relay, the ini value, RELAYCHAOS_RELAY, else the bundled reference."""
    chosen = value(config, options.RELAY)
    if chosen:
        return Path(chosen)
    from relaychaos import paths  # lazy (relaychaos.plugin)

    return paths.reference_relay()


def budget_name(config: pytest.Config) -> str:
    """The state machine's budget: its option, ini value or RELAYCHAOS_BUDGET, else ci under CI, else quick."""
    from relaychaos.engine.budget import default_budget  # lazy (relaychaos.plugin)

    return value(config, options.BUDGET, default=default_budget())


def sandbox_choice(config: pytest.Config) -> tuple[str, str | None]:
    """(mode, limit overrides): each its option, ini value or environment variable; the mode auto by default."""
    return value(config, options.SANDBOX), value(config, options.SANDBOX_LIMIT)


def run_folder(config: pytest.Config) -> Path | None:
    """The run folder (the folder of --relaychaos-results), where workers keep histories and logs; or None."""
    path = config.getoption("relaychaos_results", None)
    return (config.invocation_params.dir / path).resolve().parent if path else None


def extra_scenario_files(config: pytest.Config) -> list[tuple[str, Path]]:
    """(set, path) of every scenario file in the --relaychaos-scenarios folders, sorted."""
    out = []
    for spec in config.getoption("relaychaos_scenarios", None) or []:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not Path(folder).is_dir():
            raise pytest.UsageError(
                f"--relaychaos-scenarios {spec!r} is not SET=FOLDER with an existing folder; "
                "fix: e.g. --relaychaos-scenarios hidden=grading/hidden"
            )
        out += [(name, p) for p in sorted(Path(folder).glob("*.y*ml"))]
    return out
