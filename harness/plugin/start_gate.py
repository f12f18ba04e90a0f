"""A relay that cannot start stops the run at its first scenario, with one message, not dozens of failures.

    pytest scenarios --relaychaos-not-started PATH       (`relaychaos run` gives it: run-folder/not-started.txt)

In the process that receives every report (xdist's controller, or the only process), the first
scenario whose serve never answered its health path (it exited, or never answered within
ready_timeout_s), before any scenario's serve has, stops the session (xdist's too: its workers
finish their test, close their stacks and go) and writes why to PATH: what went wrong, the fix
and the tail of serve's log, as the failed start said it. `relaychaos run` prints it and exits 2.
Once any serve has started, a start that fails is that scenario's verdict (`serve-ready`), as
always. A run's serve is told by the `relaychaos_serve` user property (relaychaos.plugin.fixtures).
Without the option nothing stops: `relaychaos grade` judges a relay that will not start itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOT_STARTED = "relaychaos_not_started"


class StartGate:
    """Stops the session at the first never-started serve, when no serve has started yet; writes why to `out`."""

    def __init__(self, config: pytest.Config, out: Path, relay: Path):
        self.config, self.out, self.relay = config, out, relay
        self.session: pytest.Session | None = None
        self.started = False
        self.stopped = False

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        serve = next((json.loads(str(v)) for k, v in report.user_properties if k == "relaychaos_serve"), None)
        if serve is None or report.when != "call" or self.stopped:
            return
        if serve.get("started"):
            self.started = True
            return
        if self.started:
            return  # a relay that starts in some scenarios: each is judged on its own
        self.stopped = True
        why = str(serve.get("why") or "serve never answered its health path").rstrip()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(
            f"the relay cannot be tested: its serve never started (in {report.nodeid.rpartition('::')[2]}, the "
            f"run's first scenario to start it), so the run stopped there:\n{why}\n"
        )
        stop = f"the relay's serve never started; the run stops ({self.out})"
        if self.session is not None:
            self.session.shouldstop = stop
        dsession = self.config.pluginmanager.getplugin("dsession")  # xdist's controller loop reads its own
        if dsession is not None:
            dsession.shouldstop = stop


class WorkerStop:
    """An xdist worker stops after its test once the controller has stopped the run (the file it wrote exists):
    the tests already sent to it are not started."""

    def __init__(self, out: Path):
        self.out = out
        self.session: pytest.Session | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" and self.session is not None and self.out.exists():
            self.session.shouldstop = f"the relay's serve never started; the run stops ({self.out})"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("relaychaos").addoption(
        "--relaychaos-not-started",
        dest=NOT_STARTED,
        default=None,
        metavar="PATH",
        help="stop the run at the first scenario whose serve never started, when none has yet; write why to PATH",
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption(NOT_STARTED, None)
    if not path:
        return
    out = (config.invocation_params.dir / path).resolve()
    if hasattr(config, "workerinput"):  # an xdist worker: it stops once the controller has
        config.pluginmanager.register(WorkerStop(out), "relaychaos-start-gate-worker")
        return
    from relaychaos.plugin import run_config  # lazy (relaychaos.plugin)

    out.unlink(missing_ok=True)  # the xdist controller (or a plain run) sees every report
    config.pluginmanager.register(StartGate(config, out, run_config.relay_path(config)), "relaychaos-start-gate")
