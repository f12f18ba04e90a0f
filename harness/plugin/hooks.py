"""The pytest plugin: options, markers and report hooks; the fixtures are in relaychaos.plugin.fixtures.

    pytest scenarios --relay path/to/relay.toml     (or ini `relaychaos_relay`, or RELAYCHAOS_RELAY)

Options are relaychaos.options' (each with its environment and ini names) plus the run's own
(--relaychaos-results, --relaychaos-scenarios). A test whose fixtures start processes gets the
`stack` marker, so `pytest -m "not stack"` is the subset that starts none. With
--relaychaos-results, relaychaos.plugin.results_recorder writes results.json as reports arrive.
relaychaos.plugin.machine_gate adds the gate between named scenarios and the state machine. The plugin
only adds: no Hypothesis profile is loaded, so a project's own tests keep their settings.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from relaychaos import options
from relaychaos.plugin import run_config

if TYPE_CHECKING:
    import pluggy

pytest_plugins = [
    "relaychaos.plugin.fixtures",
    "relaychaos.plugin.machine_gate",
    "relaychaos.plugin.landing_gate",
    "relaychaos.plugin.start_gate",
]
FAMILIES = {
    "basic": "the contract's answer table with no fault",
    "fault": "network faults between the parts",
    "race": "concurrent duplicates",
    "crash": "relays killed and restarted",
    "batch": "resolve, reprocess and purge",
    "regression": "scenario files in scenarios/regressions",
    "stateful": "the Hypothesis state machine",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("relaychaos", "relaychaos: chaos testing of a payment relay")
    options.add_to_pytest(group, parser)
    group.addoption(
        "--relaychaos-results",
        dest="relaychaos_results",
        default=None,
        metavar="PATH",
        help="write the run's results JSON (outcome and verdicts per scenario) to PATH",
    )
    group.addoption(
        "--relaychaos-scenarios",
        dest="relaychaos_scenarios",
        action="append",
        default=[],
        metavar="SET=FOLDER",
        help="also run every scenario file in FOLDER, as scenario set SET (e.g. hidden=grading/hidden; repeatable)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "stack: needs the real stack (Toxiproxy, the account system, a relay)")
    for family, what in FAMILIES.items():
        config.addinivalue_line("markers", f"{family}: relaychaos scenarios: {what}")
    for option in options.OPTIONS:  # a bad value in the ini file or the environment stops the run at once
        run_config.value(config, option)
    path = config.getoption("relaychaos_results", None)
    if path and not hasattr(config, "workerinput"):  # the xdist controller (or a plain run) writes it
        from relaychaos.errors import HarnessError  # lazy (relaychaos.plugin)
        from relaychaos.plugin.results_recorder import ResultsRecorder  # lazy (relaychaos.plugin)
        from relaychaos.sandbox.levels import probe  # lazy (relaychaos.plugin)
        from relaychaos.stack import toxiproxy_reach  # lazy (relaychaos.plugin)

        try:
            level = probe(*run_config.sandbox_choice(config), toxiproxy_reach.sandbox_without(toxiproxy_reach.reach()))
        except HarnessError as e:  # strict refused; another host's Toxiproxy without this machine's address for it
            raise pytest.UsageError(str(e)) from None
        recorder = ResultsRecorder(run_config.relay_path(config), Path(path), level)
        config.pluginmanager.register(recorder, "relaychaos-results")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("relaychaos_scenarios", None):  # no extra scenario files: nothing to run is no skip
        unused = [i for i in items if "relaychaos_extra_scenario" in getattr(i, "fixturenames", ())]
        if unused:
            config.hook.pytest_deselected(items=unused)
            items[:] = [i for i in items if i not in unused]
    for item in items:
        if "relaychaos_processes" in getattr(item, "fixturenames", ()):  # the closure of the test's fixtures
            item.add_marker(pytest.mark.stack)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "relaychaos_extra_scenario" in metafunc.fixturenames:
        files = run_config.extra_scenario_files(metafunc.config)
        metafunc.parametrize("relaychaos_extra_scenario", files, ids=[f"{s}:{p.stem}" for s, p in files])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    """A harness error or a chaos failure reported as its message alone; a failure with its stacks' log tails."""
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None:
        from relaychaos.errors import HarnessError  # lazy (relaychaos.plugin)
        from relaychaos.run.chaos import ChaosFailure, NotApplicable, NotExercised  # lazy (relaychaos.plugin)

        if isinstance(
            call.excinfo.value, (NotExercised, NotApplicable)
        ):  # never a pass, never a broken rule: a skip saying why
            report.outcome = "skipped"
            report.longrepr = (str(item.path), (item.location[1] or 0) + 1, str(call.excinfo.value))
            return
        if isinstance(call.excinfo.value, HarnessError):
            report.longrepr = f"{type(call.excinfo.value).__name__}: {call.excinfo.value}"
        elif isinstance(call.excinfo.value, ChaosFailure):
            report.longrepr = str(call.excinfo.value)
    if report.failed:
        from relaychaos.plugin.fixtures import STACKS  # lazy (relaychaos.plugin)
        from relaychaos.stack.processes import log_tail  # lazy (relaychaos.plugin)

        stacks: list = item.stash.get(STACKS, [])
        logs = [(i, log) for i, stack in enumerate(stacks) for log in sorted(stack.workdir.glob("*.log"))]
        if item.config.get_verbosity() > 0:
            for i, log in logs:
                report.sections.append((f"relay log {log.name} (stack {i})", log_tail(log, 30)))
        elif logs:  # a red run's console stays short: where the logs are, their tails with -v
            where = sorted({str(log.parent) for _, log in logs})
            report.sections.append(("relay logs", f"in {', '.join(where)} (their last lines here with -v)"))
