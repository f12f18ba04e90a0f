"""One test's world: Toxiproxy proxies, the account system, a relay under the supervisor, a channel.

    channel ─► [hub-SLOT proxy] ─► relay serve SLOT ─► [account proxy] ─► account system

The stack only acts: it records nothing (the engine's parts record what they do through the run's Recorder).
Proxy names are unique per stack, so parallel workers never share one; `close()` kills the relays and removes the
proxies, whatever happened before. Under a sandbox the ledger lives in a folder of the sandbox's uid while the
relays run, and is moved into `workdir/ledger/` by close(). The proxies are where `reach` says (toxiproxy_reach).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from relaychaos.errors import RelayError, ToxiproxyConflict
from relaychaos.ports import lease_port, release_port
from relaychaos.recorder import Recorder
from relaychaos.sandbox.policy import Sandbox
from relaychaos.stack import ledger_file, ledger_tables
from relaychaos.stack import postgres as postgres_checks
from relaychaos.stack.account_system import AccountSystem
from relaychaos.stack.channel import Channel, Outcome, RetryPolicy
from relaychaos.stack.container_pod import Pod
from relaychaos.stack.container_supervisor import ContainerSupervisor
from relaychaos.stack.ledger_tables import LedgerColumns
from relaychaos.stack.manifest import Manifest
from relaychaos.stack.postgres import Postgres
from relaychaos.stack.proxy_owner import prefix
from relaychaos.stack.speech import speech_for
from relaychaos.stack.supervisor import RelayProcess, Supervisor
from relaychaos.stack.toxiproxy_control import ProxyRef, Toxiproxy
from relaychaos.stack.toxiproxy_reach import LOCAL, Reach, can_run
from relaychaos.tolerances import CURRENT as TOLERANCES
from relaychaos.tolerances import DEFAULT_ACCOUNT_TIMEOUT_MS

LEDGER_KEPT_MIB = 64  # the final ledger a stack keeps for the run's record, at most
DEFAULT_RETRY_POLICY = RetryPolicy()  # frozen, so one shared default is safe: send once


class Stack:
    """Builds and drives the parts for one scenario; use as a context manager."""

    def __init__(
        self,
        *,
        toxiproxy: Toxiproxy,
        account: AccountSystem,
        manifest: Manifest,
        workdir: Path,
        name: str = "stack",
        account_timeout_ms: int = DEFAULT_ACCOUNT_TIMEOUT_MS,
        accounts: dict[str, int] | None = None,
        sandbox: Sandbox,
        postgres: Callable[[], Postgres] | None = None,
        reach: Reach = LOCAL,
    ):
        self.toxiproxy, self.account, self.manifest = toxiproxy, account, manifest
        if account.shape != manifest.profile.downstream:
            raise RelayError(
                f"the account system speaks {'the course contract' if account.shape.course else 'a PSP shape'}, "
                f"but relay '{manifest.name}' calls it in another shape ([downstream] of its relay.toml)",
                where=str(manifest.path),
                fix="start the account system with the relay's [downstream] shape (AccountSystem.start(..., shape))",
            )
        self.sandbox = sandbox  # given, never defaulted: the run definition holds the level (auto by default)
        self.reach = can_run(manifest, reach)
        self.workdir = workdir
        self.account_timeout_ms = account_timeout_ms
        self.prefix = prefix(name)  # whose the proxies are (stack/proxy_owner.py)
        self.proxies: dict[str, ProxyRef] = {}
        self._touched: set[str] = set()  # proxies given a toxic or disabled since the last heal
        self.expected: dict[str, dict] = {}  # each proxy as the harness set it: enabled, upstream, toxics
        self._closed = False
        workdir.mkdir(parents=True, exist_ok=True)
        self.ledger_path = self.sandbox.ledger_dir(workdir) / "ledger.sqlite"
        self.ledger_url: str | None = None  # a PostgreSQL ledger's database, as the harness reaches it
        self._postgres: Postgres | None = None  # the run's server, when the stack made its database there
        self._mapping_checked = False
        # a relay from a container image gets a network of its own (stack/container_supervisor.py): the proxies on it
        self.pod = Pod.open(manifest) if manifest.container else None
        self.network = self.pod.network if self.pod else self.sandbox.network
        self.listen_host = self.network.host_address if self.network else reach.listen_host
        relay_ledger_url = self._postgres_ledger(postgres) if manifest.profile.ledger.kind == "postgresql" else None
        self.reset_account(accounts)
        self._new_proxy("account", f"{reach.upstream_host}:{account.port}", listen_host=self.listen_host)
        # the relay's network (or, beside a Toxiproxy on another host, its uid's rules) lets it reach these proxies
        self.gates = [gate for gate in (self.network, self.sandbox.uid_filter) if gate is not None]
        for gate in self.gates:
            for key in ("account", "ledger"):
                if key in self.proxies:
                    gate.allow(self.proxies[key].listen_port)
        self.supervisor = self._supervisor(relay_ledger_url)

    def _supervisor(self, relay_ledger_url: str | None) -> Supervisor | ContainerSupervisor:
        """What starts and kills the relay: its commands in the sandbox, or its image's containers in the pod."""
        if self.pod is not None:
            return ContainerSupervisor(
                self.manifest,
                self.pod,
                workdir=self.workdir,
                account_url=self.proxies["account"].url,
                account_timeout_ms=self.account_timeout_ms,
                sandbox=self.sandbox,
                ledger_url=relay_ledger_url,
            )
        return Supervisor(
            self.manifest,
            workdir=self.workdir,
            account_url=self.proxies["account"].url,
            account_timeout_ms=self.account_timeout_ms,
            ledger_path=self.ledger_path,
            sandbox=self.sandbox,
            ledger_url=relay_ledger_url,
            connect=(self.proxies["ledger"].listen_port,) if "ledger" in self.proxies else (),
            listen_host=self.reach.upstream_host if self.reach.remote else None,
        )

    def _check_mapping(self) -> None:
        ledger = self.manifest.profile.ledger
        assert self.ledger_url is not None
        why = postgres_checks.mapping_problem(self.ledger_url, ledger.table, ledger.columns)
        if why:
            raise RelayError(
                f"relay '{self.manifest.name}': [ledger] maps table {ledger.table!r} and columns "
                f"{', '.join(map(repr, ledger.columns))}, which its database does not have once serve is ready: {why}",
                where=str(self.manifest.path),
                fix="name the table and columns the service keeps its idempotency keys and their status in",
            )
        self._mapping_checked = True

    def reset_account(self, accounts: dict[str, int] | None) -> None:
        """Forget the account system's calls and faults, seed `accounts`, and peek at this stack's ledger."""
        if self.ledger_url is not None:
            self.account.reset(accounts=accounts, ledger_url=self.ledger_url, ledger=self.manifest.profile.ledger)
        else:
            self.account.reset(ledger_path=self.ledger_path, accounts=accounts)

    def _postgres_ledger(self, postgres: Callable[[], Postgres] | None) -> str:
        """A fresh database for this stack's relays (the team's own when relay.toml gives its url, else one of
        the run's PostgreSQL), behind a `ledger` proxy: the URL the relay is given."""
        ledger = self.manifest.profile.ledger
        if ledger.url is not None:
            why = postgres_checks.unreachable(ledger.url)
            if why:
                raise RelayError(
                    f"relay '{self.manifest.name}': the [ledger] url cannot be reached: {why}",
                    where=str(self.manifest.path),
                    fix="start that database (or correct the url), or leave `url` out and the harness starts one",
                )
            self.ledger_url = ledger.url
        elif postgres is None:
            raise RelayError(
                f"relay '{self.manifest.name}' keeps its ledger in PostgreSQL, and this run has no PostgreSQL server",
                where=str(self.manifest.path),
                fix="give the stack a server (the plugin's relaychaos_postgres fixture), or a [ledger] url",
            )
        else:
            self._postgres = postgres()
            self.ledger_url = self._postgres.create_database()
        parts = urlsplit(self.ledger_url)
        proxy = self._new_proxy("ledger", f"{parts.hostname}:{parts.port or 5432}", listen_host=self.listen_host)
        netloc = (parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else "") + proxy.url.split("//", 1)[1]
        return urlunsplit(parts._replace(netloc=netloc))

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill every relay process, remove every proxy, clear the account system's faults (once; again: nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.supervisor.close()
            if self._postgres is not None and self.ledger_url is not None:  # what the relay's role left running
                self._postgres.end_sessions(self.ledger_url)
        finally:
            for gate in self.gates:
                for key in ("account", "ledger"):
                    if key in self.proxies:
                        gate.forbid(self.proxies[key].listen_port)
            for proxy in self.proxies.values():
                with contextlib.suppress(Exception):  # the server may be gone already; nothing else to undo
                    self.toxiproxy.destroy(proxy.name)
                if not self.reach.remote:  # a port of this machine's, leased while the proxy lived
                    release_port(proxy.listen_port)
            self.proxies.clear()
            if self.pod is not None:
                self.pod.close()
            with contextlib.suppress(Exception):
                self.account.clear_faults()
            self._keep_ledger()

    def _keep_ledger(self) -> None:
        """Keep a copy of the ledger in workdir/ledger/ for whoever looks after the run (its regular files only,
        up to LEDGER_KEPT_MIB), and remove the sandbox's ledger folder: all the relay wrote there."""
        folder = self.ledger_path.parent
        if folder == self.workdir or not folder.exists():
            return
        kept = ledger_file.keep(self.ledger_path, self.workdir / "ledger", LEDGER_KEPT_MIB << 20)
        self.sandbox.discard(folder)
        self.ledger_path = kept or self.workdir / "ledger" / self.ledger_path.name

    def _new_proxy(self, key: str, upstream: str, listen_host: str | None = None) -> ProxyRef:
        remote = self.reach.remote  # the server's host picks the port; the harness and the relay reach it at that host
        port = 0 if remote else lease_port()  # a lease held while the proxy exists, down or up
        try:
            made = self.toxiproxy.create_proxy(
                f"{self.prefix}-{key}", upstream, port, listen_host or self.reach.listen_host
            )
        except BaseException:
            release_port(port) if port else None
            raise
        self.proxies[key] = dataclasses.replace(made, listen_host=self.reach.proxy_host) if remote else made
        self.expected[key] = {"enabled": True, "upstream": upstream, "toxics": {}}
        return self.proxies[key]

    # -- relays ------------------------------------------------------------------------
    def start_relay(self, slot: str = "a") -> RelayProcess:
        """Start serve in slot, behind its hub proxy (created once, re-pointed on restart). The first start on a
        PostgreSQL ledger checks that relay.toml's [ledger] mapping reads the table serve made."""
        relay = self.supervisor.start(slot)
        if self.ledger_url is not None and not self._mapping_checked:
            self._check_mapping()
        key, upstream = f"hub-{slot}", f"{relay.host}:{relay.port}"
        if key in self.proxies:
            self.expected[key]["upstream"] = upstream
            self.proxies[key] = dataclasses.replace(self.proxies[key], upstream=upstream)
            _tolerate(lambda: self.toxiproxy.set_upstream(self.proxies[key], upstream))
        else:
            self._new_proxy(key, upstream)
        return relay

    def kill_relay(self, slot: str = "a") -> tuple[int, int | None] | None:
        """SIGKILL the slot's serve: (pid, exit status), or None when it was not running."""
        return self.supervisor.kill(slot)

    def restart_relay(self, slot: str = "a") -> RelayProcess:
        self.kill_relay(slot)
        return self.start_relay(slot)

    def relay_url(self, slot: str = "a", *, via_hub: bool = True) -> str:
        return self.proxies[f"hub-{slot}"].url if via_hub else self.supervisor.url(slot)

    # -- faults ------------------------------------------------------------------------
    def side(self, proxy: str) -> str:
        """'channel' for a hub proxy (channel → relay), 'account' for the one in front of the account system."""
        if proxy not in self.proxies:
            raise KeyError(f"no proxy {proxy!r} in this stack; there are {', '.join(sorted(self.proxies))}")
        return proxy if proxy in ("account", "ledger") else "channel"

    def add_toxic(
        self, proxy: str, kind: str, *, stream: str = "downstream", name: str | None = None, **attributes: int | float
    ) -> str:
        """Add a toxic to proxy 'account' or 'hub-SLOT'; returns the toxic's name."""
        name = name or f"{kind}_{stream}"
        self._touched.add(proxy)
        self.expected[proxy]["toxics"][name] = {"type": kind, "stream": stream, "attributes": dict(attributes)}
        _tolerate(lambda: self.toxiproxy.add_toxic(self.proxies[proxy], name, kind, stream=stream, **attributes))
        return name

    def remove_toxic(self, proxy: str, name: str) -> None:
        self.expected[proxy]["toxics"].pop(name, None)
        _tolerate(lambda: self.toxiproxy.remove_toxic(self.proxies[proxy], name))

    def set_proxy_enabled(self, proxy: str, enabled: bool) -> None:
        self._touched.add(proxy)
        self.expected[proxy]["enabled"] = enabled
        _tolerate(lambda: self.toxiproxy.set_enabled(self.proxies[proxy], enabled))

    def heal(self) -> None:
        """Remove every toxic, enable every proxy, clear server-side faults."""
        for key in sorted(self._touched & set(self.proxies)):  # the others are as they were created
            self.expected[key].update(enabled=True, toxics={})
            _tolerate(functools.partial(self.toxiproxy.heal, self.proxies[key]))
        self._touched.clear()
        self.account.clear_faults()

    def audit(self) -> list[str]:
        """What is no longer as the harness set it: each proxy's state and toxics (one call to Toxiproxy),
        and the account system's faults. [] when nothing was touched behind its back."""
        actual = self.toxiproxy.proxies()
        return [
            change
            for key, proxy in sorted(self.proxies.items())
            for change in proxy_changes(key, self.expected[key], actual.get(proxy.name))
        ] + self.account.audit()

    # -- the channel -------------------------------------------------------------------
    def channel(
        self, recorder: Recorder, slot: str = "a", *, via_hub: bool = True, timeout_s: float | None = None
    ) -> Channel:
        """A Channel aimed at slot's current address, recording into `recorder` (use with `async with`)."""
        timeout = timeout_s if timeout_s is not None else TOLERANCES.channel_timeout_s(self.account_timeout_ms)
        netns = self.sandbox.network.path if self.sandbox.network and not via_hub and not self.pod else None
        return Channel(
            recorder,
            lambda: self.relay_url(slot, via_hub=via_hub),
            timeout_s=timeout,
            netns=netns,
            speech=speech_for(self.manifest.profile.api),
        )

    def send(
        self,
        request: dict,
        policy: RetryPolicy = DEFAULT_RETRY_POLICY,
        *,
        slot: str = "a",
        via_hub: bool = True,
        timeout_s: float | None = None,
        recorder: Recorder | None = None,
    ) -> list[Outcome]:
        """Send one transfer synchronously (for tests); see Channel.send."""

        async def go() -> list[Outcome]:
            async with self.channel(recorder or Recorder(), slot, via_hub=via_hub, timeout_s=timeout_s) as ch:
                return await ch.send(request, policy)

        return asyncio.run(go())

    def race(
        self, request: dict, n: int, *, slot: str = "a", via_hub: bool = True, recorder: Recorder | None = None
    ) -> list[Outcome]:
        """n copies of one transfer at the same instant (for tests); see Channel.race."""

        async def go() -> list[Outcome]:
            async with self.channel(recorder or Recorder(), slot, via_hub=via_hub) as ch:
                return await ch.race(request, n)

        return asyncio.run(go())

    # -- observations ------------------------------------------------------------------
    def account_stats(self) -> dict:
        """The account system's statistics: every call it received, per GUID, and the balances."""
        return self.account.stats()

    def ledger_columns(self) -> LedgerColumns:
        """The ledger table's columns, with those a keyed service's [ledger] maps (relaychaos.stack.ledger_tables)."""
        return ledger_tables.columns(self.manifest.profile, self.ledger_path, self.ledger_url)

    def ledger_rows(self, suffix: str | None = None, most: int | None = None) -> dict[str, dict]:
        """A read-only snapshot of the ledger, by GUID (only GUIDs ending in `suffix`, if given; at most `most` rows),
        in the contract's words (relaychaos.stack.ledger_tables.rows); none before the relay's first serve was
        ready to make its PostgreSQL table. sqlite3.Error or psycopg.Error when it cannot be read."""
        if self.ledger_url is not None and not self._mapping_checked:  # as a ledger file not yet made
            return {}
        return ledger_tables.rows(self.manifest.profile, self.ledger_path, self.ledger_url, suffix, most)


def _tolerate(call: Callable[[], object]) -> None:
    """Make a Toxiproxy call on the stack's own proxy; one refused because someone else changed or deleted the
    proxy is left to the audit, which reports it as tampering (a verdict, not a harness error)."""
    with contextlib.suppress(ToxiproxyConflict):
        call()


def proxy_changes(key: str, expected: dict, actual: dict | None) -> list[str]:
    """How proxy `key` as Toxiproxy reports it (`actual`) differs from what the harness set (`expected`)."""
    if actual is None:
        return [f"proxy {key} was deleted"]
    out = []
    if actual.get("enabled") != expected["enabled"]:
        out.append(
            f"proxy {key} is {'enabled' if actual.get('enabled') else 'disabled'}; the harness "
            f"{'enabled' if expected['enabled'] else 'disabled'} it"
        )
    if actual.get("upstream") != expected["upstream"]:
        out.append(
            f"proxy {key} forwards to {actual.get('upstream')}; the harness pointed it at {expected['upstream']}"
        )
    toxics = {t.get("name"): t for t in actual.get("toxics") or []}
    for name, want in sorted(expected["toxics"].items()):
        got = toxics.pop(name, None)
        if got is None:
            out.append(f"toxic {name} ({want['type']}) on proxy {key} was removed; the harness added it")
        elif (
            got.get("type") != want["type"]
            or got.get("stream") != want["stream"]
            or float(got.get("toxicity", 1.0)) != 1.0
            or any(got.get("attributes", {}).get(k) != v for k, v in want["attributes"].items())
        ):
            out.append(
                f"toxic {name} on proxy {key} was changed to {got.get('type')} {got.get('stream')} toxicity "
                f"{got.get('toxicity')} {got.get('attributes')}; the harness set {want}"
            )
    out += [
        f"toxic {name} ({t.get('type')}) on proxy {key} was added, not by the harness" for name, t in toxics.items()
    ]
    return out
