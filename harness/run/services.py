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
from relaychaos.sandbox import cgroups
from relaychaos.sandbox.policy import Sandbox
from relaychaos.stack import toxiproxy_reach, toxiproxy_server
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
        self._closers: list[Callable[[], None]] = []  # the sandbox's and PostgreSQL's: the servers go first
        self._reach: toxiproxy_reach.Reach | None = None

    def __enter__(self) -> Services:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    @property
    def reach(self) -> toxiproxy_reach.Reach:
        """Where the run's proxies are and what they reach (relaychaos.stack.toxiproxy_reach.Reach)."""
        if self._reach is None:
            self._reach = toxiproxy_reach.reach()
        return self._reach

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox every relay command of the run starts in (SandboxError when `strict` cannot be had)."""
        if self._sandbox is None:
            without = toxiproxy_reach.sandbox_without(self.reach)  # the network layer, for a server on another host
            self._sandbox = Sandbox.create(self.run.sandbox, self.run.limits, self.log_budget, without)
            self._closers.append(self._sandbox.close)
            gate = toxiproxy_reach.guard(self._sandbox, self.reach)  # the network layer's stand-in, if any
            if gate is not None:
                self._closers.append(gate.destroy)
        return self._sandbox

    @property
    def toxiproxy(self) -> Toxiproxy:
        """The control of the run's Toxiproxy server (found or started as relaychaos.stack.toxiproxy_server says);
        one the harness started that has exited since is started afresh."""
        if self._toxiproxy is not None and self._toxiproxy.child is not None and not self._toxiproxy.child.alive():
            self._toxiproxy.close()
            self._toxiproxy = None
        if self._toxiproxy is None:
            sandbox = self.sandbox  # first: its slot's services group takes the server
            self._toxiproxy = toxiproxy_server.acquire(self._logs())
            if self._toxiproxy.child is not None:
                self._contain(sandbox, self._toxiproxy.child.pid)
        return self._toxiproxy.control

    @property
    def account(self) -> AccountSystem:
        """The account-system fixture, in the shape the run's relay calls ([downstream] of its relay.toml); one
        that has exited since (its memory group's limit reached, say) is started afresh."""
        if self._account is not None and not self._account.child.alive():
            self._account.close()
            self._account = None
        if self._account is None:
            sandbox = self.sandbox  # first: its slot's services group takes the fixture
            self._account = AccountSystem.start(self._logs(), self.run.profile.downstream, self.reach.upstream_host)
            self._contain(sandbox, self._account.child.pid)
            self._account.why_gone = lambda: _oom_said(sandbox)
        return self._account

    def _contain(self, sandbox: Sandbox, pid: int) -> None:
        """Put a service the harness started into the slot's services group (relaychaos.sandbox.cgroups)."""
        if sandbox.services is not None:
            sandbox.services.join(pid)

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
            reach=self.reach,
        )

    def _close_servers(self) -> None:
        """Stop the account system and Toxiproxy the run has now (each started afresh has replaced the one before)."""
        servers, self._account, self._toxiproxy = [self._account, self._toxiproxy], None, None
        errors = []
        for server in servers:
            try:
                if server is not None:
                    server.close()
            except Exception as e:  # noqa: BLE001 - both are stopped; the first failure is raised after
                errors.append(e)
        if errors:
            raise errors[0]

    def close(self) -> None:
        """Stop every service that started, the last started first; each is stopped even if another fails."""
        closers, self._closers = [self._close_servers, *self._closers[::-1]], []
        self._sandbox = self._postgres = None
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


def _oom_said(sandbox: Sandbox) -> str:
    """What the slot's services group says of an end: the kernel's kills at its memory limit, if any."""
    kills = sandbox.services.oom_kills() if sandbox.services is not None else 0
    if not kills:
        return ""
    return (
        f"; the kernel killed {kills} process(es) of this slot's account system and Toxiproxy for reaching their "
        f"memory limit ({cgroups.SERVICES_MIB} MiB): a relay's traffic pushed them there, and the next scenario "
        "gets a fresh account system"
    )
