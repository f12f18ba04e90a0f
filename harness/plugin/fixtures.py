"""The fixtures that give a test the real stack: Toxiproxy, the account system, a sandbox, stacks, run_chaos.

`relay_manifest` (the relay under test), `toxiproxy` and `account_system` (one per xdist
worker), `relaychaos_sandbox` (this worker's sandbox), `stack` (one per test: its own proxies,
ledger and fixture state), `make_stack` (for another relay), `run_chaos` (run and check a
scenario), `relaychaos_keep` (keep a history and logs in the run folder), `relaychaos_budget`
and `relaychaos_seed` (the state machine's settings). Every fixture that starts a process
depends on `relaychaos_processes`, so a test whose fixtures reach it gets the `stack` marker
(relaychaos.plugin.hooks); a project's own fixture of the same name does not.
The stacks are put together by relaychaos.run.services from the run definition
(`relaychaos_run`), as every command's are.

A pytest plugin module (relaychaos.plugin.hooks loads it). pytest loads the plugin into every
session of a machine where relaychaos is installed, other projects' too, so the harness below
the plugin (stack, sandbox, engine) is imported inside the fixtures that use it, at their first
use, and named at the top for types alone.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from relaychaos.plugin import run_config

if TYPE_CHECKING:
    from hypothesis import settings

    from relaychaos.engine.steps import Scenario
    from relaychaos.history import History
    from relaychaos.run.chaos import ChaosResult
    from relaychaos.run.definition import RunDefinition
    from relaychaos.run.services import Services
    from relaychaos.sandbox.policy import Sandbox
    from relaychaos.stack.account_system import AccountSystem
    from relaychaos.stack.manifest import Manifest
    from relaychaos.stack.postgres import Postgres
    from relaychaos.stack.toxiproxy_control import Toxiproxy
    from relaychaos.stack.world import Stack


class Keep(Protocol):
    """relaychaos_keep: keep(history, name, stack=None) -> its path in the run folder (None: nothing is kept)."""

    def __call__(self, history: History | Path, name: str, stack: Stack | None = None) -> str | None: ...


class MakeStack(Protocol):
    """make_stack: make_stack(manifest=None, **options) -> a Stack (options: those of Services.stack)."""

    def __call__(self, manifest: Manifest | str | Path | None = None, **options: Any) -> Stack: ...


class RunChaos(Protocol):
    """run_chaos: run_chaos(scenario, manifest=None) -> its ChaosResult, run on a fresh stack and checked."""

    def __call__(self, scenario: Scenario, manifest: Manifest | str | Path | None = None) -> ChaosResult: ...


STACKS = pytest.StashKey[list["Stack"]]()  # the stacks a test made: their logs go into its failure report


@pytest.fixture(scope="session")
def relaychaos_processes() -> None:
    """Nothing itself: every fixture that starts a process asks for it, and the `stack` marker follows it."""


@pytest.fixture(scope="session")
def relaychaos_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This worker's scratch folder: logs of shared servers, one sub-folder per test."""
    return tmp_path_factory.mktemp("relaychaos")


@pytest.fixture(scope="session")
def relaychaos_run(pytestconfig: pytest.Config) -> RunDefinition:
    """The run definition (relaychaos.run.definition): the relay under test and every setting, built once."""
    return run_config.definition(pytestconfig)


@pytest.fixture(scope="session")
def relay_manifest(relaychaos_run: RunDefinition) -> Manifest:
    """The relay under test's manifest; keys it does not know are shown as warnings."""
    for problem in relaychaos_run.relay.warnings:
        warnings.warn(f"{relaychaos_run.relay.path}: {problem}", UserWarning, stacklevel=1)
    return relaychaos_run.relay


@pytest.fixture(scope="session")
def relaychaos_services(
    pytestconfig: pytest.Config, relaychaos_run: RunDefinition, relaychaos_dir: Path, relaychaos_processes: None
) -> Iterator[Services]:
    """This worker's services (relaychaos.run.services): each starts at its first use, all stop at the end."""
    from relaychaos.run.services import Services  # lazy (relaychaos.plugin)
    from relaychaos.run_folder import LOG_BUDGET  # lazy (relaychaos.plugin)

    root = run_config.run_folder(pytestconfig)
    with Services(relaychaos_run, relaychaos_dir, log_budget=root / LOG_BUDGET if root else None) as services:
        yield services


@pytest.fixture(scope="session")
def toxiproxy(relaychaos_services: Services) -> Toxiproxy:
    """The Toxiproxy control for this worker (server found or started as toxiproxy_server says)."""
    return relaychaos_services.toxiproxy


@pytest.fixture(scope="session")
def account_system(relaychaos_services: Services) -> AccountSystem:
    """The account-system fixture process for this worker, in the relay's [downstream] shape; each stack resets
    it."""
    return relaychaos_services.account


@pytest.fixture(scope="session")
def relaychaos_postgres(relaychaos_services: Services) -> Callable[[], Postgres]:
    """() -> this worker's PostgreSQL (relaychaos.stack.postgres), started at the first call: only a relay whose
    ledger is in PostgreSQL asks for it."""
    return relaychaos_services.postgres


@pytest.fixture(scope="session")
def relaychaos_sandbox(relaychaos_services: Services, request: pytest.FixtureRequest) -> Sandbox:
    """This worker's sandbox (relaychaos.sandbox): every relay command of its stacks runs inside it."""
    from relaychaos.errors import SandboxError  # lazy (relaychaos.plugin)

    try:
        sandbox = relaychaos_services.sandbox
    except SandboxError as e:
        pytest.exit(str(e), returncode=2)
    # said once a run (each xdist worker has its own sandbox, all alike): by the first worker, or a run without xdist
    worker = getattr(request.config, "workerinput", {}).get("workerid", "gw0")  # pytest-xdist's name for it
    if sandbox.missing and sandbox.mode != "off" and worker == "gw0":
        warnings.warn(sandbox.summary(), UserWarning, stacklevel=1)
    return sandbox


@pytest.fixture
def relaychaos_keep(request: pytest.FixtureRequest) -> Iterator[Keep]:
    """keep(history, name, stack) -> path: keep a history in the run folder (histories/<name>.jsonl) and,
    after the test, its stack's relay logs (logs/<name>/); the paths go into results.json. Without
    --relaychaos-results nothing is kept (None)."""
    from relaychaos.run_folder import RunFolder  # lazy (relaychaos.plugin)

    root = run_config.run_folder(request.config)
    folder = RunFolder(root) if root else None
    logs: dict[str, list[Stack]] = {}

    def keep(history: History | Path, name: str, stack: Stack | None = None) -> str | None:
        if folder is None:
            return None
        claimed = folder.claim(name)
        logs.setdefault(claimed, []).extend([stack] if stack is not None else [])
        path = folder.keep_history(history, claimed)
        request.node.user_properties.append(("relaychaos_history", json.dumps(path)))
        return path

    yield keep
    for name, stacks in logs.items():
        if stacks and folder is not None:
            kept = folder.keep_logs(name, [s.workdir for s in stacks])
            request.node.user_properties.append(("relaychaos_logs", json.dumps(kept)))


@pytest.fixture
def make_stack(
    request: pytest.FixtureRequest,
    relaychaos_services: Services,
    relaychaos_sandbox: Sandbox,
    tmp_path: Path,
    relaychaos_keep: Keep,
) -> Iterator[MakeStack]:
    """make_stack(manifest=None, **options) -> Stack, closed after the test; logs attached on failure. `account=`
    gives it another account system (one in a PSP's shape, for a relay of another profile).
    (It asks for `relaychaos_keep` so that the stacks close before their logs are kept.)"""
    from relaychaos.stack import manifest as manifests  # lazy (relaychaos.plugin)
    from relaychaos.stack.manifest import Manifest  # lazy (relaychaos.plugin)

    stacks = request.node.stash.setdefault(STACKS, [])

    def make(manifest: Manifest | str | Path | None = None, **options: Any) -> Stack:
        if manifest is not None and not isinstance(manifest, Manifest):
            manifest = manifests.load(manifest)
        stack = relaychaos_services.stack(
            tmp_path / f"stack{len(stacks)}", request.node.name, manifest=manifest, **options
        )
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()


@pytest.fixture
def stack(make_stack: MakeStack) -> Stack:
    """A Stack for the relay under test, its relay not yet started."""
    return make_stack()


@pytest.fixture
def run_chaos(request: pytest.FixtureRequest, make_stack: MakeStack, relaychaos_keep: Keep) -> RunChaos:
    """run_chaos(scenario, manifest=None) -> ChaosResult: run on a fresh stack, check, record the verdicts;
    the history and relay logs are kept in the run folder (relaychaos_keep)."""
    from relaychaos.run.chaos import run_and_check, serve_start  # lazy (relaychaos.plugin)
    from relaychaos.stack import manifest as manifests  # lazy (relaychaos.plugin)

    def run(scenario: Scenario, manifest: Manifest | str | Path | None = None) -> ChaosResult:
        if isinstance(manifest, (str, Path)):  # a relay.toml, or the folder holding one
            manifest = manifests.load(manifest)
        relay = manifest or request.getfixturevalue("relay_manifest")
        missing = sorted(scenario.batch_commands - set(relay.commands))
        if missing:
            pytest.skip(
                f"not run: scenario {scenario.name} runs {' and '.join(missing)}, which relay '{relay.name}' does not "
                "have ([commands] of its relay.toml)"
            )
        stack = make_stack(manifest, accounts=scenario.accounts, account_timeout_ms=scenario.account_timeout_ms)
        result = run_and_check(stack, scenario)
        kept = relaychaos_keep(result.history_path, scenario.name, stack)  # the saved file, moved: written once
        root = run_config.run_folder(request.config)
        if kept and root is not None:
            result.history_path = root / kept  # the incident report names the kept copy
        request.node.user_properties.append(
            ("relaychaos_verdicts", json.dumps([{**v.to_dict(), "scenario": scenario.name} for v in result.verdicts]))
        )
        if result.notes:
            request.node.user_properties.append(("relaychaos_notes", json.dumps(result.notes)))
        request.node.user_properties.append(
            ("relaychaos_landing", json.dumps([{**x.to_dict(), "scenario": scenario.name} for x in result.landing]))
        )
        request.node.user_properties.append(("relaychaos_cells", json.dumps(sorted(result.cells))))
        started, why = serve_start(result.history)
        if started is not None:  # relaychaos.plugin.start_gate: a run whose serve never starts stops at once
            request.node.user_properties.append(("relaychaos_serve", json.dumps({"started": started, "why": why})))
        return result

    return run


@pytest.fixture
def relaychaos_seed(relaychaos_run: RunDefinition) -> int | None:
    """The state machine's seed: --relaychaos-seed, else RELAYCHAOS_SEED, else None (the budget decides)."""
    return relaychaos_run.seed


@pytest.fixture
def relaychaos_budget(relaychaos_run: RunDefinition) -> settings:
    """The Hypothesis settings of the chosen budget, for the relaychaos state machine alone."""
    from relaychaos.engine.budget import budget_settings  # lazy (relaychaos.plugin)

    return budget_settings(relaychaos_run.budget)
