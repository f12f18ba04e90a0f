"""Green means tested: a run in which a scenario was not exercised does not exit 0.

A scenario whose landing claims did not all land (relaychaos.run.chaos.NotExercised) is reported
as a skip whose reason starts with "not exercised" (relaychaos.plugin.hooks). In the process
that receives every report (xdist's controller, or the only process) this plugin counts them,
lists them at the end of the terminal summary, and turns an exit status of 0 into 1: every
rule held, but something the suite claims to test was not tested. `relaychaos run` tells
the two apart by results.json (exit 3).
"""

from __future__ import annotations

import pytest


def not_exercised(report: pytest.TestReport) -> bool:
    """Whether a report is a scenario that was not exercised."""
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return False
    return str(report.longrepr[2]).startswith("not exercised")


class LandingGate:
    """Counts the scenarios not exercised; lists them; an exit status of 0 becomes 1 when there are any."""

    def __init__(self) -> None:
        self.missed: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not_exercised(report):
            self.missed.append(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.missed:
            terminalreporter.write_sep("=", f"{len(self.missed)} not exercised: every rule held, but nothing tested")
            for nodeid in self.missed:
                terminalreporter.write_line(f"NOT EXERCISED {nodeid}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.missed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(LandingGate(), "relaychaos-landing-gate")
