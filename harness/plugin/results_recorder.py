"""The run's results.json, written as reports arrive: every phase of every test, its verdicts, kept files.

Registered by the pytest plugin in the process that receives the reports (xdist's controller,
or the only process) when --relaychaos-results is given. A test's verdicts, notes, kept history
and logs reach it as the test's `user_properties` (the one channel xdist carries from workers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from relaychaos.words import Words


class ResultsRecorder:
    """Collects every phase report (xdist sends workers' reports here) into the results JSON."""

    def __init__(self, relay: Path, out: Path, sandbox: dict):
        from relaychaos.reports.results import RunResults  # lazy (relaychaos.plugin)

        self.results, self.out = RunResults(str(relay), manifest_name(relay), sandbox=sandbox), out
        self.results.provides = relay_provides(relay)
        self.results.words = relay_words(relay)
        self.results.relay_env = relay_env(relay)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from relaychaos.records.results import LandingRecord, MachineAccount, VerdictRecord  # lazy (relaychaos.plugin)
        from relaychaos.reports.results import Kept  # lazy (relaychaos.plugin)

        props = [(k, json.loads(str(raw))) for k, raw in report.user_properties if k.startswith("relaychaos_")]
        verdicts = [VerdictRecord.from_builtins(v) for k, value in props if k == "relaychaos_verdicts" for v in value]
        notes = [n for k, value in props if k == "relaychaos_notes" for n in value]
        landing = [LandingRecord.from_builtins(x) for k, value in props if k == "relaychaos_landing" for x in value]
        cells = [list(c) for k, value in props if k == "relaychaos_cells" for c in value]
        kept = Kept(
            histories=[v for k, v in props if k == "relaychaos_history"],
            logs=next((v for k, v in props if k == "relaychaos_logs"), None),
        )
        skipped = report.longrepr[2] if report.skipped and isinstance(report.longrepr, tuple) else None
        stateful = next((MachineAccount.from_builtins(value) for k, value in props if k == "relaychaos_stateful"), None)
        message = report.longreprtext if report.failed else skipped
        self.results.add(
            report.nodeid,
            report.when,
            report.outcome,
            report.duration,
            message,
            verdicts,
            notes,
            stateful,
            kept,
            landing,
            cells,
        )
        if report.when not in ("setup", "call"):  # written as each finishes: a run cut short leaves its results
            self.results.write(self.out)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if session.items:  # a plain run; under xdist the workers collect (below)
            self.results.expected = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        self.results.expected = len(ids)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.results.partial = True  # Ctrl-C: what finished is written, marked partial

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            self.results.partial = True
        self.results.write(self.out)


def manifest_name(relay: Path) -> str:
    """The relay's name as its manifest gives it (the folder's name if the manifest cannot be read)."""
    from relaychaos.errors import HarnessError  # lazy (relaychaos.plugin)
    from relaychaos.stack import manifest  # lazy (relaychaos.plugin)

    try:
        return manifest.load(relay).name
    except (HarnessError, OSError):
        return relay.parent.name


def relay_words(relay: Path) -> Words:
    """How the relay's profile names what the rules say (relaychaos.words); a manifest that cannot be read: the
    course's (the run stops on it anyway)."""
    from relaychaos.errors import HarnessError  # lazy (relaychaos.plugin)
    from relaychaos.stack import manifest  # lazy (relaychaos.plugin)
    from relaychaos.words import Words, own_commands  # lazy (relaychaos.plugin)

    try:
        loaded = manifest.load(relay)
    except (HarnessError, OSError):
        return Words()
    return Words.of(loaded.profile.name, own_commands(loaded.profile.name, loaded.commands, loaded.arguments.templates))


def relay_env(relay: Path) -> dict[str, str]:
    """The relay's own variables ([env] of its relay.toml), shown in the results as every command got them."""
    from relaychaos.errors import HarnessError  # lazy (relaychaos.plugin)
    from relaychaos.stack import manifest  # lazy (relaychaos.plugin)

    try:
        return dict(manifest.load(relay).env)
    except (HarnessError, OSError):
        return {}


def relay_provides(relay: Path) -> list[str] | None:
    """What the relay offers the rules, when it is less than everything (a course relay on SQLite: None)."""
    from relaychaos.checkers import CAPABILITIES  # lazy (relaychaos.plugin)
    from relaychaos.errors import HarnessError  # lazy (relaychaos.plugin)
    from relaychaos.stack import manifest  # lazy (relaychaos.plugin)

    try:
        loaded = manifest.load(relay)
    except (HarnessError, OSError):
        return None
    provides = loaded.profile.provides(loaded.commands)
    return None if provides == frozenset(CAPABILITIES) else sorted(provides)
