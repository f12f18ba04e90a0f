"""The relay supervisor: runs any relay.toml's commands as the contract says, and cleans up.

`serve` processes live in slots ('a', 'b', ...: two slots on one ledger are a
scaled-out hub). Each start takes a fresh free port; the supervisor waits for
`GET /health`, can SIGKILL a slot at any moment and start it again on the same
ledger. Batch commands run to completion under a time limit. Every process
keeps its output in a log file, quoted in any error; `close()` kills every
process group it started, also after a failure or an interrupt, and, as the
last supervisor using a sandbox with a uid of its own, every process left under
that uid (whatever a relay detached from its process group).

Every command starts through relaychaos.stack.launch, from a fresh working copy of
the relay's folder (one per supervisor, removed with its /tmp at close), as the sandbox's
plan says: it may listen on its RELAY_PORT, connect to the account proxy, and reach its
folder and the ledger's. A sandbox with a network of its own puts the relay at its own
address (Sandbox.relay_host): the supervisor reaches RELAY_PORT there.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from relaychaos.errors import RelayError
from relaychaos.ports import lease_port, release_port
from relaychaos.sandbox.policy import Sandbox
from relaychaos.stack import launch
from relaychaos.stack.diagnose import diagnose
from relaychaos.stack.listener_owner import stranger_on
from relaychaos.stack.manifest import Manifest
from relaychaos.stack.processes import Child, Process, log_tail, port_in_use, wait_http_ok

BATCH_TIMEOUT_S = 30.0


@dataclass
class RelayProcess:
    """One running `serve`: its slot, port and process."""

    slot: str
    port: int
    child: Process  # a Child, or a container (relaychaos.stack.container_child)
    leased: bool = False  # the port was leased by the supervisor, and goes back when the slot is killed
    host: str = "127.0.0.1"  # where the harness reaches it (the relay itself listens on RELAY_HOST)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@dataclass(frozen=True)
class BatchRun:
    """A batch command started (not yet waited for): its run number, command, argument and process."""

    run: int
    command: str
    argument: float
    argv: tuple[str, ...]
    child: Process
    started: float  # CLOCK_MONOTONIC
    wall: float  # time.time() at the start, to compare with the ledger's updated_at


@dataclass(frozen=True)
class BatchResult:
    """How a batch command ended: returncode None means it was killed at its time limit (`timed_out`)."""

    command: str
    argv: tuple[str, ...]
    returncode: int | None
    duration_s: float
    log_path: Path
    run: int = 0
    wall: float = 0.0  # time.time() at the end

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 15) -> str:
        return log_tail(self.log_path, lines)


class Supervisor:
    """Runs one relay's commands against one ledger (see the module doc)."""

    def __init__(
        self,
        manifest: Manifest,
        *,
        workdir: Path,
        account_url: str,
        account_timeout_ms: int,
        sandbox: Sandbox,
        ledger_path: Path | None = None,
        ledger_url: str | None = None,
        connect: tuple[int, ...] = (),
        listen_host: str | None = None,
    ):
        self.manifest, self.workdir = manifest, workdir
        # where serve listens (RELAY_HOST) and the harness reaches it: in the sandbox, its end of the slot's network,
        # serve listening on its own loopback; `listen_host` for a Toxiproxy on another host, which reaches it there
        self.listen_host = listen_host
        self.sandbox = sandbox  # given, never defaulted: the run definition holds the level (auto by default)
        self.copy = self.sandbox.working_copy(manifest)
        self.tmp_dir = self.sandbox.tmp_dir()
        self.sandbox.enter()
        self._closed = False
        self.account_url, self.account_timeout_ms = account_url, account_timeout_ms
        self.ledger_path = ledger_path or workdir / "ledger.sqlite"
        self.ledger_url = ledger_url  # a PostgreSQL ledger's database, as the relay reaches it
        self.connect = connect  # ports beyond the account proxy's a relay may connect to (the ledger proxy's)
        self.relays: dict[str, RelayProcess] = {}
        self.lock_delay_ms = 0  # each file lock of every command started from now on is held this long (a scenario's)
        self._batch_seq = 0
        self._batches: list[Child] = []
        self._batch_port: int | None = None  # the RELAY_PORT batch commands get (section 1: every command has one)
        workdir.mkdir(parents=True, exist_ok=True)

    @property
    def relay_host(self) -> str:
        """Where the harness reaches serve's RELAY_PORT."""
        return self.listen_host or self.sandbox.relay_host

    @property
    def folder(self) -> Path:
        """Where the relay's commands run: the manifest's folder in the working copy."""
        return self.copy.cwd

    def contract_env(self, port: int | None = None) -> dict[str, str]:
        """The contract's variables (section 1) for one command: every command gets all of them, a batch command
        a RELAY_PORT of its own too (a free port it may ignore)."""
        env = {
            "RELAY_HOST": self.listen_host or "127.0.0.1",
            "RELAY_PORT": str(port) if port is not None else "",
            "ACCOUNT_URL": self.account_url,
            "LEDGER_PATH": str(self.ledger_path),
            "ACCOUNT_TIMEOUT_MS": str(self.account_timeout_ms),
        }
        if self.ledger_url is not None:
            env["LEDGER_URL"] = self.ledger_url
        # the service's own names for the same values ([api.env]): PORT, PSP_URL, DATABASE_URL, ...
        same = {"port": "RELAY_PORT", "host": "RELAY_HOST", "downstream_url": "ACCOUNT_URL"}
        same |= {"downstream_timeout_ms": "ACCOUNT_TIMEOUT_MS", "ledger_url": "LEDGER_URL"}
        env |= {name: env.get(same[role], "") for role, name in self.manifest.profile.api.env.items()}
        return env

    def _start(
        self, command: str, log_path: Path, args: tuple[str, ...] = (), port: int | None = None, relaxed: bool = False
    ) -> Child:
        account_port = urlsplit(self.account_url).port
        if account_port is None:
            raise RelayError(
                f"the account system's URL {self.account_url!r} names no port",
                fix="give ACCOUNT_URL with an explicit port",
            )
        return launch.start(
            self.sandbox,
            self.manifest,
            command,
            copy=self.copy,
            contract=self.contract_env(port),
            log_path=log_path,
            ledger_dir=self.ledger_path.parent,
            tmp_dir=self.tmp_dir,
            connect=(account_port, *self.connect),
            args=args,
            port=port,
            relaxed=relaxed,
            lock_delay_ms=self.lock_delay_ms,
        )

    # -- serve -------------------------------------------------------------------------
    def start(self, slot: str = "a", port: int | None = None) -> RelayProcess:
        """Start `serve` in slot on `port` (default: a free one) and wait for /health.

        RelayError, with the relay's last log lines, if it exits, never answers, or the port is busy.
        """
        if slot in self.relays and self.relays[slot].child.alive():
            raise RelayError(
                f"relay slot '{slot}' is already running (pid {self.relays[slot].child.pid})",
                fix="kill() the slot before starting it again",
            )
        self.kill(slot)  # a slot whose serve died on its own: reap its group and give its port back
        leased = port is None
        port = port or lease_port()
        try:
            self.relays[slot] = RelayProcess(slot, port, self._serve(slot, port), leased, self.relay_host)
        except BaseException:
            if leased:
                release_port(port)
            raise
        return self.relays[slot]

    def _serve(self, slot: str, port: int) -> Child:
        """Spawn serve on port and wait until it, and nothing else, answers /health there."""
        host = self.relay_host
        if port_in_use(port, host):
            raise RelayError(
                f"port {port} on {host} is busy: another process listens there",
                fix="stop that process, or let the supervisor choose a free port",
            )
        log_path = self.workdir / f"relay-{slot}.log"
        child = self._start("serve", log_path, port=port)
        health = f"http://{host}:{port}{self.manifest.profile.api.health}"
        why = wait_http_ok(health, timeout_s=self.manifest.ready_timeout_s, child=child)
        if why is None and not child.alive():
            why = f"exited with status {child.popen.returncode}, yet something else answers on port {port}"
        if why is None:
            stranger = stranger_on(port, child.pid, self.sandbox.network.path if self.sandbox.network else None)
            if stranger:
                why = (
                    f"did not take port {port}: {stranger} listens there and answered /health "
                    f"(serve is pid {child.pid})"
                )
        if why:
            child.kill()
            self._refuse_start(why, log_path, health, port)
        return child

    def _refuse_start(self, why: str, log_path: Path, health: str, port: int) -> None:
        """RelayError for a serve that did not start: what the sandbox stopped, if it did, and the log's tail."""
        name = self.manifest.name
        found = (
            diagnose(
                lambda relaxed: self._start(
                    "serve", self.workdir / "sandbox-diagnosis.log", port=port, relaxed=relaxed
                ),
                health,
                self.manifest.ready_timeout_s,
                self.sandbox,
                log_path,
                port,
            )
            if self.sandbox.on
            else None
        )
        if found:
            raise RelayError(
                f"relay '{name}' serve {why} in the sandbox ({self.sandbox.summary()}); {found}; its log says:",
                where=str(self.manifest.path),
                details=log_tail(log_path),
            )
        raise RelayError(
            f"relay '{name}' serve {why}",
            where=str(self.manifest.path),
            fix="serve must listen on RELAY_HOST:RELAY_PORT and answer "
            f"GET {self.manifest.profile.api.health} with 200 within "
            f"[limits].ready_timeout_s = {self.manifest.ready_timeout_s:g} s "
            "(contract section 1); its log says:",
            details=log_tail(log_path),
        )

    def kill(self, slot: str = "a") -> tuple[int, int | None] | None:
        """SIGKILL the slot's whole process group, now, whatever it is doing: (pid, exit status), or None
        when the slot was not running."""
        relay = self.relays.pop(slot, None)
        if relay is None:
            return None
        relay.child.kill()
        if relay.leased:
            release_port(relay.port)
        return relay.child.pid, relay.child.popen.returncode

    def restart(self, slot: str = "a") -> RelayProcess:
        """Kill the slot (if running) and start it again on the same ledger, on a new port."""
        self.kill(slot)
        return self.start(slot)

    def url(self, slot: str = "a") -> str:
        if slot not in self.relays:
            raise RelayError(f"relay slot '{slot}' is not running", fix="start() it first")
        return self.relays[slot].url

    # -- batch commands ----------------------------------------------------------------
    def resolve(self, min_age_s: float, timeout_s: float = BATCH_TIMEOUT_S) -> BatchResult:
        return self.run_batch("resolve", min_age_s, timeout_s)

    def reprocess(self, max_attempts: int, timeout_s: float = BATCH_TIMEOUT_S) -> BatchResult:
        return self.run_batch("reprocess", int(max_attempts), timeout_s)

    def purge(self, retention_s: float, timeout_s: float = BATCH_TIMEOUT_S) -> BatchResult:
        return self.run_batch("purge", retention_s, timeout_s)

    def start_batch(self, command: str, argument: float) -> BatchRun:
        """Start resolve/reprocess/purge with its one argument as the manifest's [arguments] give it, without
        waiting (for two runs at once); the run's `argument` is the value the command really gets."""
        self._batch_seq += 1
        seq = self._batch_seq
        wall = time.time()
        if self._batch_port is None:
            self._batch_port = lease_port()
        child = self._start(
            command,
            self.workdir / f"batch-{seq:03d}-{command}.log",
            args=self.manifest.arguments.argv(command, argument),
            port=self._batch_port,
        )
        self._batches.append(child)
        taken = self.manifest.arguments.effective(command, argument)
        return BatchRun(seq, command, taken, tuple(child.argv), child, time.monotonic(), wall)

    def wait_batch(self, run: BatchRun, timeout_s: float) -> BatchResult:
        """Wait for a started batch run; killed (returncode None) at timeout_s."""
        try:
            rc: int | None = run.child.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            rc = None
        run.child.kill()  # the group: nothing the batch forked outlives it
        return BatchResult(
            run.command,
            run.argv,
            rc,
            round(time.monotonic() - run.started, 4),
            run.child.log_path,
            run.run,
            time.time(),
        )

    def run_batch(self, command: str, argument: float, timeout_s: float = BATCH_TIMEOUT_S) -> BatchResult:
        """Run resolve/reprocess/purge to completion (killed at timeout_s)."""
        return self.wait_batch(self.start_batch(command, argument), timeout_s)

    def close(self) -> None:
        """Kill every serve and batch process this supervisor started (and, as the sandbox's last user, every
        process left in its slot), then remove the working copy and /tmp: all the relay wrote but its logs."""
        for slot in list(self.relays):
            self.kill(slot)
        for child in self._batches:
            child.kill()
        self._batches.clear()
        if self._batch_port is not None:
            release_port(self._batch_port)
            self._batch_port = None
        if not self._closed:
            self._closed = True
            self.sandbox.leave()
            self.sandbox.discard(self.copy.root.parent, self.tmp_dir)
