"""The test tiers, kept honest: a test that starts a process must say so with a marker.

    make check    every test that needs no process: `-m "not stack and not process and not slow"`
    make test     everything

`stack` is given by the relaychaos plugin to any test whose fixtures start Toxiproxy, the
account system or a relay; `process` marks a test that starts any other process (a
subprocess, a browser, a sandboxed command, pytest in a subprocess); `slow` marks a test that
starts none but takes seconds. An audit hook (sys.addaudithook: subprocess.Popen, os.posix_spawn,
os.fork, os.exec*, os.system) sees every process a test starts, and a test that starts one
without `stack` or `process` fails, naming the marker to add: so `make check` never starts one.
"""

from __future__ import annotations

import sys

import pytest

SPAWNS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.exec", "os.system"})
_running: dict[str, object] = {"item": None, "spawned": None, "last": False}


def _audit(event: str, args: tuple) -> None:
    if event in SPAWNS and _running["item"] is not None and _running["spawned"] is None:
        _running["spawned"] = f"{event}{args[:2]!r}"[:200]


sys.addaudithook(_audit)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    _running.update(item=item, spawned=None, last=nextitem is None)
    try:
        return (yield)
    finally:
        _running.update(item=None, spawned=None, last=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    spawned = _running["spawned"]
    # the last test's teardown also ends the session's fixtures (a worker's sandbox, its servers): what they start
    # to close is theirs, not the test's
    session_end = call.when == "teardown" and _running.get("last")
    if spawned and report.passed and not session_end and not {"stack", "process"} & set(item.keywords):
        _running["spawned"] = None  # said once, in the phase that started it
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started a process ({spawned}) but is not marked `process` (or `stack`): "
            "fix: mark it @pytest.mark.process (or the module: pytestmark = pytest.mark.process), so that "
            "`make check` stays the tier that starts none"
        )
    return report
