"""The one place a run's stacks are put together: its shared services, and a fresh stack from them per scenario.

    with Services(run, folder) as services:            # run: relaychaos.run.definition.RunDefinition
        with services.stack(folder / "s1", "name", accounts=..., account_timeout_ms=...) as stack:
            ...

The services are the sandbox (at the level the run definition holds), a Toxiproxy server, the
account system in the shape the relay calls ([downstream] of its relay.toml: the course contract
or a PSP) and, for a relay whose ledger is in PostgreSQL, a PostgreSQL server. Each starts at its
first use and `close()` stops what started, in reverse order, whatever happened before. Every
command (run's pytest fixtures, replay, soak, incident verify, grading's start probe, the
benchmarks) builds its stacks here, so a keyed service runs wherever a course relay does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from relaychaos.run.definition import RunDefinition
from relaychaos.sandbox.policy import Sandbox
from relaychaos.stack import toxiproxy_server
from relaychaos.stack.account_system import AccountSystem
from relaychaos.stack.manifest import Manifest
from relaychaos.stack.postgres import Postgres
from relaychaos.stack.toxiproxy_control import Toxiproxy
from relaychaos.stack.world import Stack
from relaychaos.tolerances import DEFAULT_ACCOUNT_TIMEOUT_MS


class Services:
    """A run's shared services, started at first use, logging into `folder`; use as a context manager."""

    def __init__(self, run: RunDefinition, folder: Path, log_budget: Path | None = None):
        self.run, self.folder, self.log_budget = run, Path(folder), log_budget
        self._sandbox: Sandbox | None = None
        self._toxiproxy: toxiproxy_server.ToxiproxyServer | None = None
        self._account: AccountSystem | None = None
        self._postgres: Postgres | None = None
        self._closers: list[Callable[[], None]] = []

    def __enter__(self) -> Services:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox every relay command of the run starts in (SandboxError when `strict` cannot be had)."""
        if self._sandbox is None:
            self._sandbox = Sandbox.create(self.run.sandbox, self.run.limits, log_budget=self.log_budget)
            self._closers.append(self._sandbox.close)
        return self._sandbox

    @property
    def toxiproxy(self) -> Toxiproxy:
        """The control of the run's Toxiproxy server (found or started as relaychaos.stack.toxiproxy_server says)."""
        if self._toxiproxy is None:
            self._toxiproxy = toxiproxy_server.acquire(self._logs())
            self._closers.append(self._toxiproxy.close)
        return self._toxiproxy.control

    @property
    def account(self) -> AccountSystem:
        """The account-system fixture, in the shape the run's relay calls ([downstream] of its relay.toml)."""
        if self._account is None:
            self._account = AccountSystem.start(self._logs(), self.run.profile.downstream)
            self._closers.append(self._account.close)
        return self._account

    def postgres(self) -> Postgres:
        """The run's PostgreSQL server, started at the first call: only a relay whose ledger is in it asks."""
        if self._postgres is None:
            self._postgres = Postgres.start(self._logs())
            self._closers.append(self._postgres.close)
        return self._postgres

    def stack(
        self,
        workdir: Path,
        name: str,
        *,
        manifest: Manifest | None = None,
        accounts: dict[str, int] | None = None,
        account_timeout_ms: int = DEFAULT_ACCOUNT_TIMEOUT_MS,
        account: AccountSystem | None = None,
        sandbox: Sandbox | None = None,
    ) -> Stack:
        """A fresh stack (not yet started) for the run's relay, or for `manifest` (another relay of the run, in the
        same profile; `account` gives another account system, for one in another shape; `sandbox` another
        sandbox, one with other limits)."""
        return Stack(
            toxiproxy=self.toxiproxy,
            account=account or self.account,
            manifest=manifest or self.run.relay,
            workdir=workdir,
            name=name,
            accounts=accounts,
            account_timeout_ms=account_timeout_ms,
            sandbox=sandbox or self.sandbox,
            postgres=self.postgres,
        )

    def close(self) -> None:
        """Stop every service that started, the last started first; each is stopped even if another fails."""
        closers, self._closers = self._closers[::-1], []
        self._sandbox = self._toxiproxy = self._account = self._postgres = None
        errors = []
        for close in closers:
            try:
                close()
            except Exception as e:  # noqa: BLE001 - every service is stopped; the first failure is raised after
                errors.append(e)
        if errors:
            raise errors[0]

    def _logs(self) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        return self.folder
