"""The gate between the named scenarios and the state machine: a bug a named scenario has shown is not hunted.

    pytest --pyargs relaychaos.scenarios          a named scenario fails: the machine is skipped, saying why
    pytest --pyargs relaychaos.scenarios --hunt   the machine runs whatever the named scenarios showed

A named scenario is a test marked `named` (the suite's scenarios and scenario files). The machine's
test asks for the `relaychaos_gate` fixture, and every test that does is ordered last in the session,
so that under pytest-xdist no named scenario is queued behind it on its worker. The process that
receives the reports (xdist's controller, or the only process) writes one file per finished named
scenario into the gate folder (named by its node id's digest, holding its outcome) and hands the
folder to the workers. The machine reads it as each example starts (a failure there: it stops,
skipped), and once its search is over it waits until every named scenario of the session has
finished, and is skipped if one failed. So whether the random stories count depends on the named
scenarios' outcomes alone, never on which worker finished first: the same relay, the same outcome.
Patience: a gate that sees no named scenario finish for PATIENCE_S stops waiting and says so.

This module is a pytest plugin (relaychaos.plugin.hooks loads it); it imports the engine lazily.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest

from relaychaos import options
from relaychaos.atomic import write_text
from relaychaos.options import HUNT

NAMED = "named"  # the marker of a named scenario
WHY_NOT = "a named scenario has already shown a bug; the random stories did not run"
HOW_TO_HUNT = "--hunt (or RELAYCHAOS_HUNT=1, ini relaychaos_hunt = true) runs them anyway"
PATIENCE_S = 300.0
_FOLDER = pytest.StashKey[Path]()


def why_not(failed: list[str]) -> str:
    """What the report says when the machine did not run: the issue's sentence, the failed scenarios, the fix."""
    names = f" (failed: {', '.join(failed)})" if failed else ""
    return f"{WHY_NOT}{names}; {HOW_TO_HUNT}"


def scenario_name(nodeid: str) -> str:
    """A named scenario's name as people read it: the test's parameter, else the test's name."""
    m = re.search(r"\[(.*)\]$", nodeid)
    return m.group(1) if m else nodeid.split("::")[-1]


def _marker(folder: Path, nodeid: str) -> Path:
    return folder / (hashlib.sha256(nodeid.encode()).hexdigest()[:24] + ".json")


@dataclass
class Gate:
    """What the machine's test sees of the named scenarios of its session."""

    folder: Path | None  # None: no gate folder was handed to this process (the machine runs)
    named: tuple[str, ...]  # node ids of the session's named scenarios
    hunt: bool = False
    why_not: str | None = None  # set when the gate stopped the machine
    checked_at: float = 0.0
    outcomes: dict[str, str] = field(default_factory=dict)

    def read(self) -> dict[str, str]:
        """{node id: outcome} of the named scenarios finished so far."""
        for nodeid in self.named:
            if nodeid not in self.outcomes and self.folder is not None:
                with contextlib.suppress(OSError, ValueError, KeyError):
                    self.outcomes[nodeid] = json.loads(_marker(self.folder, nodeid).read_text())["outcome"]
        return self.outcomes

    def failed(self) -> list[str]:
        return [scenario_name(n) for n, outcome in self.read().items() if outcome in ("failed", "error")]

    def check(self) -> None:
        """Before an example: skip the test if a named scenario has failed (read at most twice a second)."""
        if self.hunt or self.folder is None or time.monotonic() - self.checked_at < 0.5:
            return
        self.checked_at = time.monotonic()
        if self.failed():
            self._skip(self.failed())

    def settle(self) -> None:
        """After the search: wait for every named scenario to finish; skip the test if one failed."""
        if self.hunt or self.folder is None:
            return
        seen, progress = len(self.read()), time.monotonic()
        while len(self.read()) < len(self.named):
            if self.failed():
                break
            if len(self.outcomes) > seen:
                seen, progress = len(self.outcomes), time.monotonic()
            elif time.monotonic() - progress > PATIENCE_S:
                missing = [scenario_name(n) for n in self.named if n not in self.outcomes]
                self.why_not = None
                print(
                    f"relaychaos: gave up waiting for named scenarios {', '.join(missing)} after "
                    f"{PATIENCE_S:g} s without one finishing; the random stories count as run"
                )
                return
            time.sleep(0.1)
        if self.failed():
            self._skip(self.failed())

    def _skip(self, failed: list[str]) -> None:
        self.why_not = why_not(failed)
        pytest.skip(self.why_not)


class WorkerNode(Protocol):
    """What GateWriter hands an xdist worker (an xdist.workermanage.WorkerController: xdist ships no types)."""

    workerinput: dict[str, object]  # what the worker reads as config.workerinput


class GateWriter:
    """In the process that receives every report: the gate folder, one file per finished named scenario."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.failed: set[str] = set()  # node ids of named scenarios that failed in some phase

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: WorkerNode) -> None:  # xdist: hand the folder to each worker
        node.workerinput["relaychaos_gate"] = str(self.folder)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if NAMED not in report.keywords:
            return
        if report.failed:
            self.failed.add(report.nodeid)
        if report.when in ("teardown", "???"):  # "???": xdist's report of a test whose worker crashed
            outcome = "failed" if report.nodeid in self.failed else "skipped" if report.skipped else "passed"
            write_text(_marker(self.folder, report.nodeid), json.dumps({"nodeid": report.nodeid, "outcome": outcome}))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{NAMED}: a named scenario: when one fails, the state machine does not run (unless --hunt)"
    )
    if hasattr(config, "workerinput"):
        if config.workerinput.get("relaychaos_gate"):
            config.stash[_FOLDER] = Path(config.workerinput["relaychaos_gate"])
        return
    folder = Path(tempfile.mkdtemp(prefix="relaychaos-gate-"))
    config.stash[_FOLDER] = folder
    config.pluginmanager.register(GateWriter(folder), "relaychaos-gate")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The machine's test last: no named scenario waits behind it on a worker."""
    gated = [i for i in items if "relaychaos_gate" in getattr(i, "fixturenames", ())]
    if gated:
        items[:] = [i for i in items if i not in gated] + gated


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if WHY_NOT in reason:
            terminalreporter.write_line(f"relaychaos: {reason.removeprefix('Skipped: ')}", yellow=True)


@pytest.fixture
def relaychaos_gate(request: pytest.FixtureRequest) -> Gate:
    """The gate (see the module doc); a test that asks for it is ordered last."""
    named = tuple(i.nodeid for i in request.session.items if i.get_closest_marker(NAMED))
    return Gate(
        request.config.stash.get(_FOLDER, None),
        named,
        bool(options.from_pytest(request.config, HUNT)),
    )


@pytest.fixture
def relaychaos_shrink_s(pytestconfig: pytest.Config) -> float:
    """Seconds of shrinking a stateful failure: --relaychaos-shrink-s, the ini value, RELAYCHAOS_SHRINK_S, else
    the budget's."""
    from relaychaos.engine.budget import SHRINK_S as BY_BUDGET  # lazy (relaychaos.plugin)
    from relaychaos.plugin.run_config import budget_name  # lazy (relaychaos.plugin)

    return options.from_pytest(pytestconfig, options.SHRINK_S, default=BY_BUDGET[budget_name(pytestconfig)])
