"""relaychaos.plugin.start_gate: the first scenario whose serve never started, before any serve has, stops the
run with why; once a serve has started, a failed start is that scenario's verdict and the run goes on."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import pytest

from relaychaos.plugin.start_gate import StartGate, WorkerStop


def report(name: str, started: bool | None, when: Literal["call", "teardown"] = "call") -> pytest.TestReport:
    props = (
        [] if started is None else [("relaychaos_serve", json.dumps({"started": started, "why": f"{name}: exited"}))]
    )
    return pytest.TestReport(
        f"test_suite.py::test_scenario[{name}]", ("x", 0, name), {}, "failed", None, when, user_properties=props
    )


def gate(tmp_path: Path) -> tuple[StartGate, Any, Any]:
    dsession = SimpleNamespace(shouldstop=False)
    config = SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=lambda name: dsession))
    g = StartGate(config, tmp_path / "not-started.txt", tmp_path / "relay.toml")  # type: ignore[arg-type]
    session = SimpleNamespace(shouldstop=False)
    g.pytest_sessionstart(session)  # type: ignore[arg-type]
    return g, session, dsession


def test_the_first_serve_that_never_started_stops_the_run_and_says_why(tmp_path: Path) -> None:
    g, session, dsession = gate(tmp_path)
    g.pytest_runtest_logreport(report("stateful", None))  # no serve started or failed: nothing to say
    assert not session.shouldstop
    g.pytest_runtest_logreport(report("happy-path", False))
    assert session.shouldstop and dsession.shouldstop, "the session stops, xdist's controller loop too"
    text = (tmp_path / "not-started.txt").read_text()
    assert "its serve never started (in test_scenario[happy-path]" in text and "happy-path: exited" in text
    g.pytest_runtest_logreport(report("account-b2xx", False))  # the other worker's: the first one's message stays
    assert "account-b2xx" not in (tmp_path / "not-started.txt").read_text()


def test_a_relay_that_started_once_is_judged_per_scenario_after(tmp_path: Path) -> None:
    g, session, dsession = gate(tmp_path)
    g.pytest_runtest_logreport(report("happy-path", True))
    g.pytest_runtest_logreport(report("crash-restart", False))
    assert not session.shouldstop and not dsession.shouldstop and not (tmp_path / "not-started.txt").exists()


def test_a_worker_stops_after_its_test_once_the_controller_has(tmp_path: Path) -> None:
    w, session = WorkerStop(tmp_path / "not-started.txt"), SimpleNamespace(shouldstop=False)
    w.pytest_sessionstart(session)  # type: ignore[arg-type]
    w.pytest_runtest_logreport(report("happy-path", False, "teardown"))
    assert not session.shouldstop
    (tmp_path / "not-started.txt").write_text("why")
    w.pytest_runtest_logreport(report("happy-path", False, "teardown"))
    assert session.shouldstop
