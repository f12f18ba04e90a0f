"""The relay supervisor: runs any relay.toml's commands as the contract says, and cleans up.

`serve` processes live in slots ('a', 'b', ...: two slots on one ledger are a
scaled-out hub). Each start takes a fresh free port; the supervisor waits for
`GET /health`, can SIGKILL a slot at any moment and start it again on the same
ledger. Batch commands run to completion under a time limit. Every process
keeps its output in a log file, quoted in any error; `close()` kills every
process group it started, also after a failure or an interrupt, and, as the
last supervisor using a sandbox with a uid of its own, every process left under
that uid (whatever a relay detached from its process group).

Under a sandbox (relaychaos.sandbox) every command runs from the sandbox's working
copy of the relay's folder, as the sandbox's plan says: it may listen on its
RELAY_PORT, connect to the account proxy, and reach its folder and the ledger's.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from relaychaos.errors import RelayError
from relaychaos.sandbox.diagnose import diagnose
from relaychaos.sandbox.plan import Plan
from relaychaos.sandbox.policy import Sandbox
from relaychaos.stack.manifest import Manifest
from relaychaos.stack.listener_owner import stranger_on
from relaychaos.stack.ports import lease_port, release_port
from relaychaos.stack.processes import Child, log_tail, port_in_use, spawn, wait_http_ok

BATCH_TIMEOUT_S = 30.0
BATCH_FLAGS = {"resolve": "--min-age", "reprocess": "--max-attempts", "purge": "--retention"}  # contract §1


@dataclass
class RelayProcess:
    """One running `serve`: its slot, port and process."""

    slot: str
    port: int
    child: Child
    leased: bool = False  # the port was leased by the supervisor, and goes back when the slot is killed

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass(frozen=True)
class BatchRun:
    """A batch command started (not yet waited for): its run number, command, argument and process."""

    run: int
    command: str
    argument: float
    argv: tuple[str, ...]
    child: Child
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

    def __init__(self, manifest: Manifest, *, workdir: Path, account_url: str, account_timeout_ms: int,
                 ledger_path: Path | None = None, sandbox: Sandbox | None = None):
        self.manifest, self.workdir = manifest, workdir
        self.sandbox = sandbox or Sandbox.create("off")
        self.folder = self.sandbox.working_copy(manifest.folder)
        self.sandbox.enter()
        self._closed = False
        self.account_url, self.account_timeout_ms = account_url, account_timeout_ms
        self.ledger_path = ledger_path or workdir / "ledger.sqlite"
        self.relays: dict[str, RelayProcess] = {}
        self._batch_seq = 0
        self._batches: list[Child] = []
        workdir.mkdir(parents=True, exist_ok=True)

    # -- environment -------------------------------------------------------------------
    def env(self, port: int | None = None) -> dict[str, str]:
        """The contract's environment on top of the harness's, with this Python first on PATH."""
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        env.update(RELAY_HOST="127.0.0.1", ACCOUNT_URL=self.account_url, LEDGER_PATH=str(self.ledger_path),
                   ACCOUNT_TIMEOUT_MS=str(self.account_timeout_ms), PYTHONUNBUFFERED="1")
        env["RELAY_PORT"] = str(port) if port is not None else ""
        if self.sandbox.on:  # the harness's own home and temporary folder are not the relay's
            env["HOME"] = str(self.folder)
            tmp = self.sandbox.tmp_dir()
            env.update({"TMPDIR": str(tmp)} if tmp else {})
        return env

    def _executable(self, command: str, argv0: str, env: dict[str, str]) -> str:
        """argv0 as found (relative to the relay's folder, or on PATH); RelayError naming the manifest if not."""
        found = (str(self.folder / argv0) if os.access(self.folder / argv0, os.X_OK) else None) if "/" in argv0 \
            else shutil.which(argv0, path=env["PATH"])
        if found is None or os.path.isdir(found):
            raise RelayError(f"[commands].{command} = {list(self.manifest.commands[command])} cannot be run: "
                             f"`{argv0}` is not an executable file", where=str(self.manifest.path),
                             fix=f"make `{argv0}` an executable that exists on PATH or relative to "
                                 f"{self.manifest.folder}")
        return found

    def _plan(self, command: str, argv0: str, env: dict[str, str], port: int | None) -> Plan:
        return self.sandbox.plan(command, folder=self.folder, ledger_dir=self.ledger_path.parent,
                                 argv0=self._executable(command, argv0, env),
                                 connect=(urlsplit(self.account_url).port,), bind=(port,) if port else ())

    def _spawn(self, command: str, argv: list[str], log_path: Path, env: dict[str, str],
               port: int | None = None, plan: Plan | None = None) -> Child:
        plan = plan or self._plan(command, argv[0], env, port)
        return spawn(f"{self.manifest.name}:{command}", argv, log_path=log_path, cwd=self.folder, env=env, plan=plan)

    # -- serve -------------------------------------------------------------------------
    def start(self, slot: str = "a", port: int | None = None) -> RelayProcess:
        """Start `serve` in slot on `port` (default: a free one) and wait for /health.

        RelayError, with the relay's last log lines, if it exits, never answers, or the port is busy.
        """
        if slot in self.relays and self.relays[slot].child.alive():
            raise RelayError(f"relay slot '{slot}' is already running (pid {self.relays[slot].child.pid})",
                             fix="kill() the slot before starting it again")
        self.kill(slot)  # a slot whose serve died on its own: reap its group and give its port back
        leased = port is None
        port = port or lease_port()
        try:
            self.relays[slot] = RelayProcess(slot, port, self._serve(slot, port), leased)
        except BaseException:
            if leased:
                release_port(port)
            raise
        return self.relays[slot]

    def _serve(self, slot: str, port: int) -> Child:
        """Spawn serve on port and wait until it, and nothing else, answers /health there."""
        if port_in_use(port):
            raise RelayError(f"port {port} on 127.0.0.1 is busy: another process listens there",
                             fix="stop that process, or let the supervisor choose a free port")
        log_path = self.workdir / f"relay-{slot}.log"
        argv = list(self.manifest.commands["serve"])
        child = self._spawn("serve", argv, log_path, self.env(port), port)
        why = wait_http_ok(f"http://127.0.0.1:{port}/health", timeout_s=self.manifest.ready_timeout_s, child=child)
        if why is None and not child.alive():
            why = f"exited with status {child.popen.returncode}, yet something else answers on port {port}"
        if why is None:
            stranger = stranger_on(port, child.pid)
            if stranger:
                why = (f"did not take port {port}: {stranger} listens there and answered /health "
                       f"(serve is pid {child.pid})")
        if why:
            child.kill()
            layer = self._diagnose(argv, port) if self.sandbox.on else None
            if layer:
                raise RelayError(f"relay '{self.manifest.name}' serve {why} in the sandbox ({self.sandbox.summary()})"
                                 f"; {layer}; its log in the sandbox says:", where=str(self.manifest.path),
                                 details=log_tail(log_path))
            raise RelayError(f"relay '{self.manifest.name}' serve {why}", where=str(self.manifest.path),
                             fix="serve must listen on RELAY_HOST:RELAY_PORT and answer GET /health with 200 "
                                 f"within [limits].ready_timeout_s = {self.manifest.ready_timeout_s:g} s "
                                 "(contract section 1); its log says:", details=log_tail(log_path))
        return child

    def _diagnose(self, argv: list[str], port: int) -> str | None:
        """Which sandbox layer keeps serve from starting (relaychaos.sandbox.diagnose), or None."""
        env = self.env(port)
        log = self.workdir / "sandbox-diagnosis.log"
        return diagnose(lambda plan: self._spawn("serve", argv, log, env, port, plan),
                        self._plan("serve", argv[0], env, port), f"http://127.0.0.1:{port}/health",
                        self.manifest.ready_timeout_s, self.sandbox.limits)

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
        """Start resolve/reprocess/purge with its one argument, without waiting (for two runs at once)."""
        self._batch_seq += 1
        seq = self._batch_seq
        argv = list(self.manifest.commands[command]) + [BATCH_FLAGS[command], seconds_text(argument)]
        wall = time.time()
        child = self._spawn(command, argv, self.workdir / f"batch-{seq:03d}-{command}.log", self.env())
        self._batches.append(child)
        return BatchRun(seq, command, float(argument), tuple(argv), child, time.monotonic(), wall)

    def wait_batch(self, run: BatchRun, timeout_s: float) -> BatchResult:
        """Wait for a started batch run; killed (returncode None) at timeout_s."""
        try:
            rc: int | None = run.child.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            rc = None
        run.child.kill()  # the group: nothing the batch forked outlives it
        return BatchResult(run.command, run.argv, rc, round(time.monotonic() - run.started, 4), run.child.log_path,
                           run.run, time.time())

    def run_batch(self, command: str, argument: float, timeout_s: float = BATCH_TIMEOUT_S) -> BatchResult:
        """Run resolve/reprocess/purge to completion (killed at timeout_s)."""
        return self.wait_batch(self.start_batch(command, argument), timeout_s)

    def close(self) -> None:
        """Kill every serve and batch process this supervisor started (and, as the sandbox's last user, every
        process left under its uid)."""
        for slot in list(self.relays):
            self.kill(slot)
        for child in self._batches:
            child.kill()
        self._batches.clear()
        if not self._closed:
            self._closed = True
            self.sandbox.leave()


def seconds_text(value: float) -> str:
    """A batch argument as the command line gets it: `5`, `0.45` (whole numbers without a point)."""
    return str(int(value)) if float(value) == int(value) else repr(float(value))
