"""A relay run from its container image ([container] of relay.toml) with the Docker engine, as the supervisor
runs a relay's commands: slots of `serve`, SIGKILL and restart on the same ledger, batch commands, logs, cleanup.

    pod = Pod.open(manifest)                             # a holder container and its network (before the proxies)
    sup = ContainerSupervisor(manifest, pod, workdir=..., account_url=..., ...)
    sup.start("a"); sup.kill("a"); sup.start("a")        # a new container each start, same network, same ledger
    sup.close(); pod.close()                             # every container removed, the network gone

The network: the pod's holder (relaychaos.stack.netns_holder) keeps a namespace with a veth pair to the
harness and nothing else (relaychaos.sandbox.container_network); every container of the relay joins it
(`network_mode="container:HOLDER"`), so it reaches only the harness's end, and there only the ports of its
stack's proxies. Slot a listens on [container] port inside, slot b on port + 1, ... (its [api.env] port
variable says which); the harness reaches it at the pod's relay address.

Each container runs as the sandbox slot's uid (else nobody), with every capability dropped, no new
privileges, Docker's default seccomp profile, a read-only root with a private /tmp, and the sandbox's
memory, task and CPU limits as Docker's. Its output is copied into the stack's relay log as it comes, as
a command's is. Every container carries the label LABEL (value: the harness's pid) and is removed on
close, on any error, and at exit (relaychaos.stack.container_child).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from relaychaos.errors import RelayError
from relaychaos.sandbox.policy import Sandbox
from relaychaos.stack import container_child, toxiproxy_docker
from relaychaos.stack.container_child import ContainerChild, remove, track
from relaychaos.stack.container_pod import BUILD_FIX, NOBODY, SLOTS, Pod, spec_of
from relaychaos.stack.manifest import Manifest
from relaychaos.stack.processes import log_tail, wait_http_ok
from relaychaos.stack.supervisor import BATCH_TIMEOUT_S, BatchResult, BatchRun, RelayProcess

TMP_MIB = 64  # each container's private /tmp (memory, counted in its limit)


class ContainerSupervisor:
    """Runs one relay's image against one ledger, in its pod's network (see the module doc)."""

    def __init__(
        self,
        manifest: Manifest,
        pod: Pod,
        *,
        workdir: Path,
        account_url: str,
        account_timeout_ms: int,
        sandbox: Sandbox,
        ledger_url: str | None = None,
    ):
        self.manifest, self.pod, self.workdir, self.sandbox = manifest, pod, workdir, sandbox
        self.spec = spec_of(manifest)
        self.account_url, self.account_timeout_ms, self.ledger_url = account_url, account_timeout_ms, ledger_url
        self.relays: dict[str, RelayProcess] = {}
        self.lock_delay_ms = 0  # held by the sandbox's init, for commands only: a container's locks are not delayed
        self._batch_seq = 0
        self._batches: list[ContainerChild] = []
        workdir.mkdir(parents=True, exist_ok=True)

    def contract_env(self, port: int | None = None) -> dict[str, str]:
        """The variables of one container: the contract's, the service's own names for them ([api.env]), and
        its own settings ([env])."""
        env = {
            "RELAY_HOST": "127.0.0.1",
            "RELAY_PORT": str(port) if port is not None else "",
            "ACCOUNT_URL": self.account_url,
            "ACCOUNT_TIMEOUT_MS": str(self.account_timeout_ms),
        }
        if self.ledger_url is not None:
            env["LEDGER_URL"] = self.ledger_url
        same = {"port": "RELAY_PORT", "host": "RELAY_HOST", "downstream_url": "ACCOUNT_URL"}
        same |= {"downstream_timeout_ms": "ACCOUNT_TIMEOUT_MS", "ledger_url": "LEDGER_URL"}
        env |= {name: env.get(same[role], "") for role, name in self.manifest.profile.api.env.items()}
        return self.manifest.env | env

    # -- serve -------------------------------------------------------------------------
    def start(self, slot: str = "a") -> RelayProcess:
        """Start a container of the image in slot and wait for its health path; RelayError, with its log's last
        lines, if it exits or never answers."""
        if slot in self.relays and self.relays[slot].child.alive():
            raise RelayError(f"relay slot '{slot}' is already running", fix="kill() the slot before starting it again")
        self.kill(slot)
        port = self._port(slot)
        log_path = self.workdir / f"relay-{slot}.log"
        child = self._run(
            f"{self.manifest.name}:serve", list(self.spec.command), log_path, port, self.manifest.commands["serve"]
        )
        host = self.pod.network.relay_address
        health = f"http://{host}:{port}{self.manifest.profile.api.health}"
        why = self._wait_healthy(child, health)
        if why:
            child.kill()
            raise RelayError(
                f"relay '{self.manifest.name}' serve (container of {self.spec.image}) {why}",
                where=f"{self.manifest.path} [container]",
                fix=f"the service must listen on port {port} inside (its [api.env] port variable, else "
                f"[container] port) and answer GET {self.manifest.profile.api.health} with 200 within "
                f"[limits].ready_timeout_s = {self.manifest.ready_timeout_s:g} s; its log says:",
                details=log_tail(log_path),
            )
        self.relays[slot] = RelayProcess(slot, port, child, host=host)
        return self.relays[slot]

    def _port(self, slot: str) -> int:
        index = ord(slot[0]) - ord("a") if len(slot) == 1 else -1
        if not 0 <= index < SLOTS:
            raise RelayError(
                f"relay slot {slot!r}: a relay from a container image has slots a to {chr(ord('a') + SLOTS - 1)}",
                fix="use one of those slots",
            )
        if index and "port" not in self.manifest.profile.api.env:
            raise RelayError(
                f"relay '{self.manifest.name}' cannot run a second container (slot {slot}): its containers share "
                f"one network, and it listens on [container] port {self.spec.port}, a port the harness cannot move",
                where=f"{self.manifest.path} [api.env]",
                fix='name the variable that sets its port (`port = "PORT"` in [api.env]), or run scenarios with '
                "one relay",
            )
        return self.spec.port + index

    def _wait_healthy(self, child: ContainerChild, health: str) -> str | None:
        """None once `health` answers 200; else why not: the container exited, or the time ran out."""
        deadline = time.monotonic() + self.manifest.ready_timeout_s
        while True:
            if not child.alive():
                return f"exited with status {child.popen.returncode} before answering {health}"
            why = wait_http_ok(health, timeout_s=0)  # one try
            if why is None:
                return None
            if time.monotonic() >= deadline:
                last = why.partition(" (last: ")[2].rstrip(")") or why
                within = f"{self.manifest.ready_timeout_s:g} s"
                return f"did not answer {health} with HTTP 200 within {within} (last: {last})"
            time.sleep(0.02)

    def kill(self, slot: str = "a") -> tuple[int, int | None] | None:
        """SIGKILL the slot's container (container.kill) and remove it: (its pid, its exit status), or None when
        the slot was not running."""
        relay = self.relays.pop(slot, None)
        if relay is None:
            return None
        relay.child.kill()
        return relay.child.pid, relay.child.popen.returncode

    def restart(self, slot: str = "a") -> RelayProcess:
        """Kill the slot (if running) and start a new container on the same ledger."""
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
        """Start resolve/reprocess/purge as a container of the image, its [commands] argv (and the argument as
        [arguments] give it) as the container's command."""
        if command not in self.manifest.commands:
            raise RelayError(
                f"relay '{self.manifest.name}' has no `{command}` command, and the harness was asked to run it",
                where=f"{self.manifest.path} [commands]",
                fix=f"add `{command}` (its argv in the image) to [commands], or run only scenarios that do not run it",
            )
        self._batch_seq += 1
        argv = [*self.manifest.commands[command], *self.manifest.arguments.argv(command, argument)]
        wall = time.time()
        child = self._run(
            f"{self.manifest.name}:{command}",
            argv,
            self.workdir / f"batch-{self._batch_seq:03d}-{command}.log",
            self.spec.port + SLOTS - 1,  # a port of its own that no serve slot takes
            ("docker", "run", self.spec.image, *argv),
        )
        self._batches.append(child)
        taken = self.manifest.arguments.effective(command, argument)
        return BatchRun(self._batch_seq, command, taken, tuple(argv), child, time.monotonic(), wall)

    def wait_batch(self, run: BatchRun, timeout_s: float) -> BatchResult:
        """Wait for a started batch container; killed (returncode None) at timeout_s."""
        try:
            rc: int | None = run.child.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            rc = None
        run.child.kill()
        took = round(time.monotonic() - run.started, 4)
        return BatchResult(run.command, run.argv, rc, took, run.child.log_path, run.run, time.time())

    def run_batch(self, command: str, argument: float, timeout_s: float = BATCH_TIMEOUT_S) -> BatchResult:
        return self.wait_batch(self.start_batch(command, argument), timeout_s)

    # -- containers ----------------------------------------------------------------------
    def _run(
        self, name: str, command: list[str], log_path: Path, port: int, recorded: tuple[str, ...]
    ) -> ContainerChild:
        """Create and start one container of the image in the pod's network, its output pumped into log_path."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            log.write(f"--- {time.strftime('%H:%M:%S')} start {name}: {list(recorded)}\n".encode())
        limits = self.sandbox.limits
        slot = self.sandbox.slot
        try:
            container = self.pod.client.containers.create(
                self.spec.image,
                command[1:] if command else None,  # a whole argv in the image: its entrypoint and CMD both
                entrypoint=command[:1] or None,
                environment=self.contract_env(port),
                network_mode=f"container:{self.pod.holder.id}",
                name=f"relaychaos-relay-{os.getpid()}-{self.pod.lease}-{name.rpartition(':')[2]}-{time.time_ns()}",
                labels={container_child.LABEL: str(os.getpid())},
                user=f"{slot.uid}:{slot.gid}" if slot is not None and slot.separate else NOBODY,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=True,
                tmpfs={"/tmp": f"size={TMP_MIB}m,mode=1777"},
                mem_limit=f"{limits.memory_mib}m",
                memswap_limit=f"{limits.memory_mib}m",
                pids_limit=limits.tasks,
                cpu_shares=limits.cpu_shares,
            )
        except Exception as e:
            raise RelayError(
                f"could not create a container of {self.spec.image}: {toxiproxy_docker.first_line(e)}",
                where=f"{self.manifest.path} [container]",
                fix=BUILD_FIX,
            ) from None
        track(container)
        try:
            container.start()
            container.reload()
        except Exception as e:
            remove(container)
            raise RelayError(
                f"could not start a container of {self.spec.image}: {toxiproxy_docker.first_line(e)}",
                where=f"{self.manifest.path} [container]",
                fix="check [container] command (an argv in the image) and the image's entrypoint",
            ) from None
        child = ContainerChild(name, list(recorded), log_path, container, int(container.attrs["State"]["Pid"]))
        child.follow()
        return child

    def close(self) -> None:
        """Kill and remove every container this supervisor started (the pod is its stack's to close)."""
        for slot in list(self.relays):
            self.kill(slot)
        for child in self._batches:
            child.kill()
        self._batches.clear()
