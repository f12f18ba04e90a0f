"""What the suite's tests use of the pytest plugin's fixtures, by shape.

The fixtures are relaychaos.plugin's (fixtures.py, machine_gate.py), a layer above the scenarios, so the tests
name what they use of them here, as Protocols: the plugin's own types satisfy them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from relaychaos.engine.steps import Scenario
    from relaychaos.history import History
    from relaychaos.stack.world import Stack


class Result(Protocol):
    """A checked run (relaychaos.run.chaos.ChaosResult), as a test asserts on it."""

    def assert_holds(self) -> None: ...


class RunChaos(Protocol):
    """run_chaos(scenario) -> its result: run on a fresh stack of the relay under test, and checked."""

    def __call__(self, scenario: Scenario) -> Result: ...


class MakeStack(Protocol):
    """make_stack(accounts=..., account_timeout_ms=...) -> a Stack of the relay under test, closed after the test."""

    def __call__(self, *, accounts: dict[str, int], account_timeout_ms: int) -> Stack: ...


class Keep(Protocol):
    """relaychaos_keep: keep(history, name, stack) -> its path in the run folder (None: nothing is kept)."""

    def __call__(self, history: History | Path, name: str, stack: Stack | None = None) -> str | None: ...


class Gate(Protocol):
    """relaychaos_gate (relaychaos.plugin.machine_gate.Gate): whether the machine may run, and why not."""

    why_not: str | None

    def check(self) -> None: ...

    def settle(self) -> None: ...
