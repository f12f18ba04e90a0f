"""The fixtures that give a test the real stack: Toxiproxy, the account system, a sandbox, stacks, run_chaos.

`relay_manifest` (the relay under test), `toxiproxy` and `account_system` (one per xdist
worker), `relaychaos_sandbox` (this worker's sandbox), `stack` (one per test: its own proxies,
ledger and fixture state), `make_stack` (for another relay), `run_chaos` (run and check a
scenario), `relaychaos_keep` (keep a history and logs in the run folder), `relaychaos_budget`
and `relaychaos_seed` (the state machine's settings). Every fixture that starts a process
depends on `relaychaos_processes`, so a test whose fixtures reach it gets the `stack` marker
(relaychaos.plugin.hooks); a project's own fixture of the same name does not.
A pytest plugin module (relaychaos.plugin.hooks loads it); the engine is imported lazily.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from relaychaos.plugin import run_config

if TYPE_CHECKING:
    from relaychaos.stack.world import Stack

STACKS = pytest.StashKey[list["Stack"]]()  # the stacks a test made: their logs go into its failure report


@pytest.fixture(scope="session")
def relaychaos_processes() -> None:
    """Nothing itself: every fixture that starts a process asks for it, and the `stack` marker follows it."""


@pytest.fixture(scope="session")
def relaychaos_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This worker's scratch folder: logs of shared servers, one sub-folder per test."""
    return tmp_path_factory.mktemp("relaychaos")


@pytest.fixture(scope="session")
def relay_manifest(pytestconfig: pytest.Config):
    """The relay under test's manifest; keys it does not know are shown as warnings."""
    import warnings

    from relaychaos.stack import manifest

    loaded = manifest.load(run_config.relay_path(pytestconfig))
    for problem in loaded.warnings:
        warnings.warn(f"{loaded.path}: {problem}", UserWarning, stacklevel=1)
    return loaded


@pytest.fixture(scope="session")
def toxiproxy(relaychaos_dir: Path, relaychaos_processes):
    """The Toxiproxy control for this worker (server found or started as toxiproxy_server says)."""
    from relaychaos.stack import toxiproxy_server

    server = toxiproxy_server.acquire(relaychaos_dir)
    yield server.control
    server.close()


@pytest.fixture(scope="session")
def account_system(relaychaos_dir: Path, relaychaos_processes, relay_manifest):
    """The account-system fixture process for this worker, in the relay's [downstream] shape; each stack resets
    it."""
    from relaychaos.stack.account_system import AccountSystem

    system = AccountSystem.start(relaychaos_dir, relay_manifest.profile.downstream)
    yield system
    system.close()


@pytest.fixture(scope="session")
def relaychaos_postgres(relaychaos_dir: Path, relaychaos_processes):
    """() -> this worker's PostgreSQL (relaychaos.stack.postgres), started at the first call: only a relay whose
    ledger is in PostgreSQL asks for it."""
    from relaychaos.stack.postgres import Postgres

    started: list[Postgres] = []

    def server() -> Postgres:
        if not started:
            started.append(Postgres.start(relaychaos_dir))
        return started[0]

    yield server
    for pg in started:
        pg.close()


@pytest.fixture(scope="session")
def relaychaos_sandbox(pytestconfig: pytest.Config, relaychaos_processes):
    """This worker's sandbox (relaychaos.sandbox): every relay command of its stacks runs inside it."""
    import warnings

    from relaychaos.errors import SandboxError
    from relaychaos.run_folder import LOG_BUDGET
    from relaychaos.sandbox.policy import Limits, Sandbox

    mode, limits = run_config.sandbox_choice(pytestconfig)
    root = run_config.run_folder(pytestconfig)
    try:
        sandbox = Sandbox.create(mode, Limits().with_overrides(limits), log_budget=root / LOG_BUDGET if root else None)
    except SandboxError as e:
        pytest.exit(str(e), returncode=2)
    if sandbox.missing and mode != "off":
        warnings.warn(sandbox.summary(), UserWarning, stacklevel=1)
    yield sandbox
    sandbox.close()


@pytest.fixture
def relaychaos_keep(request: pytest.FixtureRequest):
    """keep(history, name, stack) -> path: keep a history in the run folder (histories/<name>.jsonl) and,
    after the test, its stack's relay logs (logs/<name>/); the paths go into results.json. Without
    --relaychaos-results nothing is kept (None)."""
    from relaychaos.run_folder import RunFolder

    root = run_config.run_folder(request.config)
    folder = RunFolder(root) if root else None
    logs: dict[str, list] = {}

    def keep(history, name: str, stack=None) -> str | None:
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
    toxiproxy,
    account_system,
    relay_manifest,
    relaychaos_sandbox,
    relaychaos_postgres,
    tmp_path: Path,
    relaychaos_keep,
):
    """make_stack(manifest=None, **options) -> Stack, closed after the test; logs attached on failure. `account=`
    gives it another account system (one in a PSP's shape, for a relay of another profile).
    (It asks for `relaychaos_keep` so that the stacks close before their logs are kept.)"""
    from relaychaos.stack import manifest as manifests
    from relaychaos.stack.world import Stack

    stacks = request.node.stash.setdefault(STACKS, [])

    def make(manifest=None, **options) -> Stack:
        if manifest is not None and not hasattr(manifest, "commands"):
            manifest = manifests.load(manifest)
        stack = Stack(
            toxiproxy=toxiproxy,
            manifest=manifest or relay_manifest,
            workdir=tmp_path / f"stack{len(stacks)}",
            name=request.node.name,
            **{"account": account_system, "sandbox": relaychaos_sandbox, "postgres": relaychaos_postgres, **options},
        )
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()


@pytest.fixture
def stack(make_stack):
    """A Stack for the relay under test, its relay not yet started."""
    return make_stack()


@pytest.fixture
def run_chaos(request: pytest.FixtureRequest, make_stack, relaychaos_keep):
    """run_chaos(scenario, manifest=None) -> ChaosResult: run on a fresh stack, check, record the verdicts;
    the history and relay logs are kept in the run folder (relaychaos_keep)."""
    from relaychaos.run.chaos import run_and_check
    from relaychaos.stack import manifest as manifests

    def run(scenario, manifest=None):
        if manifest is not None and not hasattr(manifest, "commands"):
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
        return result

    return run


@pytest.fixture
def relaychaos_seed(pytestconfig: pytest.Config) -> int | None:
    """The state machine's seed: --relaychaos-seed, else RELAYCHAOS_SEED, else None (the budget decides)."""
    return run_config.seed(pytestconfig)


@pytest.fixture
def relaychaos_budget(pytestconfig: pytest.Config):
    """The Hypothesis settings of the chosen budget, for the relaychaos state machine alone."""
    from relaychaos.engine.budget import budget_settings

    return budget_settings(run_config.budget_name(pytestconfig))
