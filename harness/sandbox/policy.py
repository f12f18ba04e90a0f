"""The harness's side of the sandbox: what this machine can enforce, and each relay command's plan.

    sandbox = Sandbox.create("auto")          # probes, claims a slot (a uid of its own when root)
    plan = sandbox.plan("serve", folder=..., ledger_dir=..., connect=(account_port,), bind=(port,))
    spawn(name, argv, log_path=..., plan=plan)

Layers, each on when the machine offers it (`auto`), required (`strict`), or none (`off`):
- uid: a system user per slot (root only), owning the relay's working copy and its ledger folders;
- rlimits: processes, data size, open files, file size, no core files, CPU time;
- mounts (root only): a private /tmp, and folders the relay's uid cannot enter (such as /root, where
  a Python may live) replaced by a tmpfs holding just the runtime it needs;
- Landlock: files (read-only: system folders and the runtime; read-write: its working copy, its
  ledger folder, its /tmp), TCP (connect: the account proxy; bind: RELAY_PORT), and scoping of
  signals and abstract sockets to the relay's own processes.
`level()` says what is enforced, for results.json and the report.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import platform
import site
import shutil
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from relaychaos.errors import SandboxError
from relaychaos.sandbox import landlock, slots
from relaychaos.sandbox.plan import RLIMITS, Plan, Tmpfs

MODES = ("auto", "strict", "off")
SYSTEM_READ_ONLY = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
COPY_IGNORE = shutil.ignore_patterns(".git", "__pycache__", ".venv", "node_modules/.cache")


@dataclass(frozen=True)
class Limits:
    """The rlimits of every relay command. Measured needs (README, "Running untrusted relays"): a JVM
    relay serve peaks at ~0.5 GiB of data, a Go one at ~40 MiB, the Python reference at ~60 MiB; a JVM
    runs ~25 threads, each counted by RLIMIT_NPROC."""

    nproc: int = 1024  # tasks (processes and threads) of the slot's uid, all its relays together
    data_mib: int = 2048  # RLIMIT_DATA: heap and private writable mappings, per process
    nofile: int = 4096
    fsize_mib: int = 512  # the largest file a relay may write (its ledger included)
    cpu_serve_s: int = 3600  # CPU seconds of one serve (a 10-minute soak uses a fraction)
    cpu_batch_s: int = 300  # CPU seconds of one batch run (its wall limit is 30 s)

    def rlimits(self, command: str, *, own_uid: bool) -> dict[str, int]:
        limits = {"data": self.data_mib << 20, "nofile": self.nofile, "fsize": self.fsize_mib << 20, "core": 0,
                  "cpu": self.cpu_serve_s if command == "serve" else self.cpu_batch_s}
        if own_uid:  # RLIMIT_NPROC counts every task of the uid: only meaningful for a uid of the relay's own
            limits["nproc"] = self.nproc
        assert set(limits) <= set(RLIMITS)
        return limits

    def with_overrides(self, spec: str | None) -> "Limits":
        """`data_mib=3072,nproc=2048`: the limits with some changed (the --sandbox-limit option)."""
        if not spec:
            return self
        changes = {}
        for item in spec.split(","):
            key, _, value = item.partition("=")
            key = key.strip()
            if key not in {f for f in asdict(self)} or not value.strip().isdigit() or int(value) <= 0:
                raise SandboxError(f"--sandbox-limit: `{item.strip()}` is not NAME=POSITIVE_INTEGER with NAME one "
                                   f"of {', '.join(asdict(self))}", fix="e.g. --sandbox-limit data_mib=3072")
            changes[key] = int(value)
        return replace(self, **changes)


class Sandbox:
    """The sandbox of one harness process (see the module doc); `close()` kills what runs under its uid."""

    def __init__(self, mode: str, limits: Limits, slot: slots.Slot | None, abi: int, missing: list[str]):
        self.mode, self.limits, self.slot, self.abi, self.missing = mode, limits, slot, abi, missing
        self._copies: dict[Path, Path] = {}
        self._users = 0  # supervisors running relays in this sandbox now

    @classmethod
    def create(cls, mode: str = "auto", limits: Limits = Limits()) -> "Sandbox":
        """Probe the machine and claim a slot; SandboxError when `strict` cannot be had."""
        mode, root, abi, missing = _probe(mode)
        return cls(mode, limits, slots.claim(separate=root) if mode != "off" else None, abi, missing)

    @property
    def on(self) -> bool:
        return self.slot is not None

    @property
    def separate_uid(self) -> bool:
        return self.slot is not None and self.slot.separate

    def level(self) -> dict:
        """What is enforced, as results.json and the report show it."""
        user = {"user": self.slot.user, "uid": self.slot.uid} if self.slot else {}
        return _level(self.mode, self.separate_uid, self.abi, self.missing, self.limits) | user

    def summary(self) -> str:
        """One line: `sandbox auto: uid relaychaos-s0 (999), rlimits, ...` (see `describe`)."""
        return describe(self.level())

    # -- folders -----------------------------------------------------------------------
    def working_copy(self, folder: Path) -> Path:
        """The relay's folder as its commands see it: a copy owned by the slot's uid (made once per process)."""
        if not self.on:
            return folder
        if folder not in self._copies:
            target = self.slot.home / "relays" / f"{folder.name}-{len(self._copies)}"
            shutil.copytree(folder, target, symlinks=True, ignore=COPY_IGNORE)
            _chown_tree(self.slot.home / "relays", self.slot.uid, self.slot.gid)
            self._copies[folder] = target
        return self._copies[folder]

    def ledger_dir(self, name: str, default: Path) -> Path:
        """A fresh folder for one stack's ledger, owned by the slot's uid (`default` when the sandbox is off)."""
        if not self.on:
            return default
        path = self.slot.home / "ledgers" / name
        path.mkdir(parents=True, mode=0o700)
        _chown_tree(self.slot.home / "ledgers", self.slot.uid, self.slot.gid)
        return path

    def tmp_dir(self) -> Path | None:
        """TMPDIR for a relay without a private /tmp (no root): a folder in the slot's home."""
        if not self.on or self.separate_uid:
            return None
        path = self.slot.home / "tmp"
        path.mkdir(exist_ok=True)
        return path

    # -- plans -------------------------------------------------------------------------
    def plan(self, command: str, *, folder: Path, ledger_dir: Path, argv0: str | None,
             connect: tuple[int, ...], bind: tuple[int, ...]) -> Plan:
        """The plan for one relay command run from `folder` (its working copy) on the ledger in `ledger_dir`."""
        if not self.on:
            return Plan(cwd=str(folder))
        read_only = runtime_paths(argv0)
        writable = [str(folder), str(ledger_dir)]
        tmp = self.tmp_dir()
        mounts: list[Tmpfs] = []
        if self.separate_uid:
            mounts = hidden_folders(read_only + writable, self.slot.uid, self.slot.gid)
            under_tmp = [p for p in read_only + writable if p.startswith("/tmp/")]
            mounts.append(Tmpfs("/tmp", keep=outermost(under_tmp, tuple(writable)), writable=tuple(writable),
                                mode="1777", size_mib=256))
            writable.append("/tmp")
        elif tmp is not None:
            writable.append(str(tmp))
        return Plan(uid=self.slot.uid if self.separate_uid else None,
                    gid=self.slot.gid if self.separate_uid else None,
                    rlimits=self.limits.rlimits(command, own_uid=self.separate_uid), tmpfs=tuple(mounts),
                    cwd=str(folder), umask=0o077, landlock_abi=self.abi,
                    read_only=tuple(read_only) + DEVICES, read_write=tuple(writable) + DEVICES,
                    connect=connect, bind=bind)

    def enter(self) -> None:
        """A supervisor begins to use the sandbox (its relays run under the slot's uid)."""
        self._users += 1

    def leave(self) -> int:
        """A supervisor is done: when it was the last, kill every process left under the slot's own uid
        (what relays detached from their process groups); how many there were."""
        self._users = max(0, self._users - 1)
        return self.sweep() if self._users == 0 else 0

    def sweep(self) -> int:
        """Kill every process left under the slot's own uid (none when it has no uid of its own)."""
        return self.slot.sweep() if self.slot else 0

    def close(self) -> None:
        if self.slot is not None:
            self.slot.release()
            self.slot = None


def _probe(mode: str) -> tuple[str, bool, int, list[str]]:
    """(mode in force, root, Landlock ABI, what cannot be enforced); SandboxError when `strict` cannot be had."""
    if mode not in MODES:
        raise SandboxError(f"--sandbox {mode!r} is not a mode", fix=f"use one of {', '.join(MODES)}")
    if mode == "off":
        return mode, False, 0, ["everything: --sandbox off"]
    if platform.system() != "Linux":
        if mode == "strict":
            raise SandboxError(f"--sandbox strict needs Linux; this is {platform.system()}",
                               fix="grade on Linux, or use --sandbox off for a relay you trust")
        return "off", False, 0, [f"everything: the sandbox needs Linux, this is {platform.system()}"]
    root, abi = os.geteuid() == 0, landlock.abi()
    missing = []
    if not root:
        missing.append("a uid of its own, private /tmp and hidden folders: the harness does not run as root")
    if abi == 0:
        missing.append("Landlock: this kernel offers none (Linux 5.13+ with lsm=landlock)")
    elif abi < 4:
        missing.append(f"Landlock network rules: the kernel offers ABI {abi}, they need ABI 4 (Linux 6.7+)")
    if 0 < abi < 6:
        missing.append(f"Landlock signal scoping: the kernel offers ABI {abi}, it needs ABI 6 (Linux 6.12+)")
    if mode == "strict" and (not root or abi < 4):
        raise SandboxError("--sandbox strict refuses to run a relay without a uid of its own and Landlock "
                           "network rules; this machine lacks " + "; ".join(missing),
                           fix="run the harness as root on Linux 6.7+ with Landlock enabled, or use "
                               "--sandbox auto to run with what the machine offers (said in the report)")
    return mode, root, abi, missing


def _level(mode: str, separate: bool, abi: int, missing: list[str], limits: Limits) -> dict:
    if mode == "off":
        return {"mode": mode, "enforced": False, "missing": missing}
    return {"mode": mode, "enforced": True,
            "uid": "a system user per parallel worker (relaychaos-sN)" if separate else "the harness's own",
            "rlimits": limits.rlimits("serve", own_uid=separate) | {"cpu_batch": limits.cpu_batch_s},
            "mounts": ["a private /tmp", "folders the uid cannot enter hidden but for the runtime"] if separate else [],
            "landlock": {"abi": abi, "rules": landlock.kinds(abi)},
            "missing": missing}


def describe(level: dict) -> str:
    """A level (`Sandbox.level()`, `probe()`) in one line: `sandbox auto: uid relaychaos-s0 (999), rlimits,
    private /tmp, Landlock ABI 7 (filesystem, ...)`, then what is not enforced."""
    if not level["enforced"]:
        return f"sandbox {level['mode']}: relays run unconfined ({'; '.join(level['missing'])})"
    uid = f"uid {level['user']} ({level['uid']})" if "user" in level else f"uid: {level['uid']}"
    ll = level["landlock"]
    parts = [uid, "rlimits"] + (["private /tmp"] if level["mounts"] else [])
    parts.append(f"Landlock ABI {ll['abi']} ({', '.join(ll['rules'])})" if ll["abi"] else "no Landlock")
    line = f"sandbox {level['mode']}: " + ", ".join(parts)
    return line + (f"; not enforced: {'; '.join(level['missing'])}" if level["missing"] else "")


def probe(mode: str = "auto", limits: str | None = None) -> dict:
    """The level a sandbox of this mode would enforce here, without claiming a slot (for results.json)."""
    mode, root, abi, missing = _probe(mode)
    return _level(mode, root, abi, missing, Limits().with_overrides(limits))


def runtime_paths(argv0: str | None) -> list[str]:
    """Folders a relay may read: the system's, this Python's (so `python` in a manifest works), the bundled
    relays' package, and the folder of the command's own executable when it lies elsewhere."""
    paths = list(_harness_runtime())
    if argv0 and os.path.isabs(argv0):
        paths.append(str(Path(os.path.realpath(argv0)).parent))
    return list(outermost(paths))


@functools.lru_cache(maxsize=1)
def _harness_runtime() -> tuple[str, ...]:
    """The part of runtime_paths that is the same for every command of this process (found once)."""
    paths = list(SYSTEM_READ_ONLY)
    paths += [sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(os.path.realpath(sys.executable)).parents[1])]
    paths += site.getsitepackages()
    for package in ("relaychaos", "relaychaos.relay_under_test"):
        spec = importlib.util.find_spec(package)
        paths += list(spec.submodule_search_locations or []) if spec else []
    return tuple(os.path.realpath(p) for p in paths if os.path.exists(p))


def hidden_folders(paths: list[str], uid: int, gid: int) -> list[Tmpfs]:
    """A tmpfs over each topmost folder that `uid` cannot enter on the way to one of `paths` (e.g. /root,
    0700), keeping just those paths: the relay sees its runtime and nothing else of it."""
    blocked: dict[str, list[str]] = {}
    for path in paths:
        if path == "/tmp" or path.startswith("/tmp/"):
            continue  # /tmp gets a private tmpfs of its own
        for ancestor in list(reversed(Path(path).parents))[1:] + [Path(path)]:
            if not _can_enter(ancestor, uid, gid):
                blocked.setdefault(str(ancestor), []).append(path)
                break
    return [Tmpfs(at, keep=outermost(keep)) for at, keep in sorted(blocked.items())
            if not any(at.startswith(other + "/") for other in blocked)]


def outermost(paths: list[str], writable: tuple[str, ...] = ()) -> tuple[str, ...]:
    """`paths` without those inside another of them (a bind mount of the outer one carries them), except a
    writable one inside a read-only one."""
    return tuple(sorted(p for p in set(paths) if not any(
        p.startswith(q.rstrip("/") + "/") and (p not in writable or q in writable) for q in paths if q != p)))


def _can_enter(folder: Path, uid: int, gid: int) -> bool:
    try:
        st = folder.stat()
    except OSError:
        return True
    if st.st_uid == uid:
        return bool(st.st_mode & 0o100)
    if st.st_gid == gid:
        return bool(st.st_mode & 0o010)
    return bool(st.st_mode & 0o001)


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    if os.geteuid() != 0:
        return
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [dirpath] + [os.path.join(dirpath, n) for n in dirnames + filenames]:
            os.chown(name, uid, gid, follow_symlinks=False)
