"""What a sandbox enforces on this machine, layer by layer, as results.json, grade.json and the report say it.

    probe("auto")     -> the level a sandbox would have here (nothing claimed)
    describe(level)   -> one line, e.g.
                         `sandbox auto: uid (user relaychaos-relay-0 (999) of its own), mount, pid, ...;
                         not enforced: ...`

Each layer is enforced, or missing with the reason and how to get it. `auto` runs with what
the machine offers and says what it lacks; `strict` refuses to run when any layer is
missing (SandboxError naming each); `off` enforces nothing, for a relay you trust.
"""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass, replace

from relaychaos import options
from relaychaos.errors import SandboxError
from relaychaos.sandbox import cgroups, landlock, netns

MODES = options.SANDBOX_MODES
LAYERS = (
    "uid",
    "mount",
    "pid",
    "ipc",
    "uts",
    "network",
    "cgroups",
    "disk",
    "rlimits",
    "landlock",
    "seccomp",
    "environment",
    "logs",
)
SECCOMP_MACHINES = ("x86_64",)


@dataclass(frozen=True)
class Limits:
    """The limits of a relay (all its commands together, or per process where said). Measured needs are in
    docs/sandbox.md: a JVM relay serve peaks at about 100 MiB, the Python reference at about 40 MiB."""

    memory_mib: int = 1024  # cgroup: the relay as a whole, shared memory, tmpfs and page cache included
    tasks: int = 512  # cgroup: processes and threads of the relay as a whole
    cpu_shares: int = 1024  # cgroup: the relay's CPU weight, one ordinary task's
    disk_mib: int = 512  # the slot's tmpfs: working copies, ledgers and /tmp together
    log_mib: int = 64  # the submission's logs in all, every command of every run
    data_mib: int = 2048  # RLIMIT_DATA per process: heap and private writable mappings
    nproc: int = 1024  # RLIMIT_NPROC: tasks of the slot's uid
    nofile: int = 4096
    fsize_mib: int = 512  # the largest file a relay may write
    cpu_serve_s: int = 3600  # CPU seconds of one serve
    cpu_batch_s: int = 300  # CPU seconds of one batch run

    def rlimits(self, command: str, *, own_uid: bool) -> dict[str, int]:
        limits = {
            "data": self.data_mib << 20,
            "nofile": self.nofile,
            "fsize": self.fsize_mib << 20,
            "core": 0,
            "cpu": self.cpu_serve_s if command == "serve" else self.cpu_batch_s,
        }
        if own_uid:  # RLIMIT_NPROC counts every task of the uid: only meaningful for a uid of the relay's own
            limits["nproc"] = self.nproc
        return limits

    def with_overrides(self, spec: str | None) -> Limits:
        """`memory_mib=2048,tasks=1024`: the limits with some changed (the --sandbox-limit option)."""
        if not spec:
            return self
        changes = {}
        for item in spec.split(","):
            key, _, value = item.partition("=")
            key = key.strip()
            if key not in asdict(self) or not value.strip().isdigit() or int(value) <= 0:
                raise SandboxError(
                    f"--sandbox-limit: `{item.strip()}` is not NAME=POSITIVE_INTEGER with NAME one "
                    f"of {', '.join(asdict(self))}",
                    fix="e.g. --sandbox-limit memory_mib=2048",
                )
            changes[key] = int(value)
        return replace(self, **changes)


def offered() -> tuple[dict[str, str], int]:
    """(layer -> why it cannot be had here, for each missing layer; the Landlock ABI)."""
    if platform.system() != "Linux":
        return {layer: f"the sandbox needs Linux; this is {platform.system()}" for layer in LAYERS}, 0
    root = os.geteuid() == 0
    no_root = "the harness does not run as root"
    lacks = {layer: no_root for layer in ("uid", "mount", "pid", "ipc", "uts", "disk") if not root}
    for layer, why in (("network", netns.missing()), ("cgroups", cgroups.missing())):
        if why:
            lacks[layer] = why
    abi = landlock.abi()
    if abi == 0:
        lacks["landlock"] = "this kernel offers no Landlock (Linux 5.13+ with lsm=landlock)"
    if 0 < abi < 4:
        lacks["landlock network rules"] = f"the kernel offers Landlock ABI {abi}; they need ABI 4 (Linux 6.7+)"
    if 0 < abi < 6:
        lacks["landlock scoping"] = f"the kernel offers Landlock ABI {abi}; signal scoping needs ABI 6 (Linux 6.12+)"
    if platform.machine() not in SECCOMP_MACHINES:
        lacks["seccomp"] = (
            f"the seccomp filter is written for {', '.join(SECCOMP_MACHINES)}; this is {platform.machine()}"
        )
    return lacks, abi


def level(mode: str, limits: Limits, lacks: dict[str, str], abi: int, user: dict | None = None) -> dict:
    """The level on record: every layer with what it does, or why it is missing."""
    if mode == "off":
        return {"mode": mode, "enforced": False, "layers": {}, "missing": {layer: "--sandbox off" for layer in LAYERS}}
    on = {
        "uid": f"user {user['user']} ({user['uid']}) of its own" if user else "a system user per slot",
        "mount": "its own root: the system's folders and its runtime read-only, its copy, ledger folder and /tmp",
        "pid": "its own PID namespace: it sees its own processes; all die with it",
        "ipc": "its own IPC namespace: SysV and POSIX IPC gone with it",
        "uts": "its own host name",
        "network": "its own network namespace: RELAY_PORT in, the account proxy out, nothing else",
        "cgroups": f"memory {limits.memory_mib} MiB, {limits.tasks} tasks, CPU weight {limits.cpu_shares}, for the "
        "relay as a whole",
        "disk": f"{limits.disk_mib} MiB for its copy, ledger folder and /tmp together",
        "rlimits": f"data {limits.data_mib} MiB, {limits.nofile} files, file size {limits.fsize_mib} MiB per process",
        "landlock": f"ABI {abi} ({', '.join(landlock.kinds(abi))})",
        "seccomp": "TCP and Unix sockets only; no namespaces, ptrace, bpf, io_uring, mounts",
        "environment": "the contract's variables, PATH, HOME and LANG only",
        "logs": f"{limits.log_mib} MiB of logs for the submission in all",
    }
    layers = {layer: on[layer] for layer in LAYERS if layer not in lacks}
    return {"mode": mode, "enforced": True, "layers": layers, "missing": dict(lacks)}


def check(mode: str, lacks: dict[str, str], without: dict[str, str] | None = None) -> None:
    """SandboxError when `strict` cannot be had (naming each missing layer and how to get it). `without`: the layers
    the run's own set-up rules out (lacking's), whose fix is to change that set-up, not the machine."""
    if mode not in MODES:
        raise SandboxError(f"--sandbox {mode!r} is not a mode", fix=f"use one of {', '.join(MODES)}")
    if mode == "strict" and lacks:
        machine = [layer for layer in lacks if layer not in (without or {})]
        raise SandboxError(
            "--sandbox strict refuses to run a relay without every layer of the sandbox; missing: "
            + "; ".join(f"{layer} ({why})" for layer, why in lacks.items()),
            fix=(
                "run the harness as root on Linux 6.12+ with Landlock, the v1 memory, pids and cpu "
                "cgroup controllers, iproute2 and nftables (scripts/bootstrap.sh installs the "
                "tools), or use --sandbox auto to run with what the machine offers (said in the "
                "report)"
            )
            if machine
            else f"change what rules out {', '.join(lacks)} (for a Toxiproxy on another host: unset TOXIPROXY_URL, "
            "so that Toxiproxy runs on this machine), or use --sandbox auto to run without it (said in the report)",
        )


def lacking(mode: str, without: dict[str, str] | None = None) -> tuple[dict[str, str], int]:
    """(layer -> why it is missing, the Landlock ABI) for a sandbox of this mode: what the machine does not offer,
    and `without`, the layers the run cannot have (a Toxiproxy on another host: the network); nothing with `off`."""
    if mode == "off":
        return {}, 0
    lacks, abi = offered()
    return {**lacks, **(without or {})}, abi


def probe(mode: str, limits: str | None = None, without: dict[str, str] | None = None) -> dict:
    """The level a sandbox of this mode would enforce here, without claiming a slot (for results.json)."""
    lacks, abi = lacking(mode, without)
    check(mode, lacks, without)
    return level(mode, Limits().with_overrides(limits), lacks, abi)


def describe(lvl: dict) -> str:
    """A level in one line (see the module doc)."""
    if not lvl["enforced"]:
        return f"sandbox {lvl['mode']}: relays run unconfined (--sandbox off)"
    layers = lvl["layers"]
    parts = [
        f"{name} ({layers[name]})" if name in ("uid", "cgroups", "landlock") else name
        for name in LAYERS
        if name in layers
    ]
    line = f"sandbox {lvl['mode']}: " + ", ".join(parts)
    missing = lvl["missing"]
    return line + (f"; not enforced: {'; '.join(f'{k} ({v})' for k, v in missing.items())}" if missing else "")
