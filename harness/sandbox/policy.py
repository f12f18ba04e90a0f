"""The harness's side of the sandbox: a slot with every layer this machine offers, and each command's plan.

    sandbox = Sandbox.create("auto")          # probes; claims a slot: uid, network namespace, cgroups, disk
    copy = sandbox.working_copy(manifest)     # a fresh copy of the relay's folder, one per stack
    launch.start(sandbox, manifest, "serve", ...)   # the one way relay code starts (relaychaos.stack.launch)
    sandbox.discard(copy.root, ...); sandbox.close()

As root every command runs isolated (plan.Isolation): the slot's uid, network namespace and
cgroups, namespaces of its own, the filesystem view of view.py, rlimits, Landlock and seccomp,
its output capped by the submission's log budget. Without root it gets what a process can give
itself: rlimits, Landlock, seccomp, the log budget. `level()` says which (levels.py).
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import site
import sys
from collections.abc import Mapping
from pathlib import Path

from relaychaos import paths
from relaychaos.ports import port_range
from relaychaos.sandbox import cgroups, environment, kernel, levels, slots, uid_filter
from relaychaos.sandbox.cgroups import SlotCgroups
from relaychaos.sandbox.folders import RelayFolders, WorkingCopy
from relaychaos.sandbox.levels import Limits
from relaychaos.sandbox.netns import SlotNetwork
from relaychaos.sandbox.plan import Isolation, LogBudget, Plan, Ports, Rules, View

SYSTEM = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# what the sandbox's copy of a relay's folder leaves out: its history, bytecode, caches, and a `.venv` (a tool's
# environment, named so by convention; a relay's own environment goes in a folder of another name, e.g. venv/)
NOT_COPIED = (".git", "__pycache__", ".venv", "node_modules/.cache")
COPY_IGNORE = shutil.ignore_patterns(*NOT_COPIED)
DEFAULT_LIMITS = Limits()  # frozen, so one shared default is safe


class Sandbox:
    """The sandbox of one harness process (see the module doc); `close()` kills what runs in its slot."""

    def __init__(
        self,
        mode: str,
        limits: Limits,
        slot: slots.Slot | None,
        lacks: dict[str, str],
        abi: int,
        log_budget: Path | None,
    ):
        self.mode, self.limits, self.slot, self.lacks, self.abi = mode, limits, slot, lacks, abi
        self.network: SlotNetwork | None = None
        self.cgroups: SlotCgroups | None = None
        self.services: SlotCgroups | None = None  # the slot's account system and Toxiproxy (cgroups.SERVICES_MIB)
        self.uid_filter: uid_filter.UidFilter | None = None  # toxiproxy_reach.guard: Toxiproxy elsewhere
        self.log_budget = log_budget
        self._users = 0  # supervisors running relays in this sandbox now
        self._pristines: dict[Path, Path] = {}  # a relay's folder -> its copy in the slot, under the overlays

    @classmethod
    def create(
        cls, mode: str, limits: Limits = DEFAULT_LIMITS, log_budget: Path | None = None, without: dict | None = None
    ) -> Sandbox:
        """Probe the machine and claim a slot with every layer it offers but `without`'s (layer: why); SandboxError when
        `strict` cannot be had. `log_budget`: the file counting the submission's log bytes (default: the slot's)."""
        lacks, abi = levels.lacking(mode, without)
        levels.check(mode, lacks, without)
        if mode == "off":
            return cls(mode, limits, None, {}, 0, None)
        slot = slots.claim(separate="uid" not in lacks, quota_mib=limits.disk_mib if "disk" not in lacks else 0)
        sandbox = cls(mode, limits, slot, lacks, abi, log_budget)
        try:
            sandbox._isolate()
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    def _isolate(self) -> None:
        """Make the slot's network and cgroups where the machine offers them (levels.offered): one that cannot be
        made after all is a SandboxError, so that the level on record is the level enforced."""
        uid_filter.remove(self._own.number)  # a killed run's rules for this slot's uid (Toxiproxy elsewhere), if any
        if "network" not in self.lacks:
            self.network = SlotNetwork.create(self._own.number, port_range())
        if "cgroups" not in self.lacks:
            relay, services = cgroups.names(self._own.number)
            self.cgroups = SlotCgroups.create(
                relay, memory_mib=self.limits.memory_mib, tasks=self.limits.tasks, cpu_shares=self.limits.cpu_shares
            )
            self.services = SlotCgroups.create(
                services, memory_mib=cgroups.SERVICES_MIB, tasks=cgroups.SERVICES_TASKS, cpu_shares=1024
            )
        if self.log_budget is None:  # the slot's own count, gone with its home
            self.log_budget = self._own.home / ".logs"
        self._view_root.mkdir(mode=0o755, exist_ok=True)

    @property
    def _view_root(self) -> Path:
        """The empty folder each isolated command builds its root on (in its own mount namespace)."""
        return self._own.home / ".root"

    @property
    def _own(self) -> slots.Slot:  # the slot, asked for only by a sandbox that is on (that has one)
        assert self.slot is not None, "the sandbox is off: it has no slot"
        return self.slot

    # -- what it is ----------------------------------------------------------------------
    @property
    def on(self) -> bool:
        return self.slot is not None

    @property
    def separate_uid(self) -> bool:
        return self.slot is not None and self.slot.separate

    @property
    def isolated(self) -> bool:
        """Commands run in namespaces of their own (root)."""
        return self.separate_uid

    @property
    def relay_host(self) -> str:
        """Where the harness reaches a relay's RELAY_PORT (its end of the slot's network, or loopback)."""
        return self.network.relay_address if self.network else "127.0.0.1"

    @property
    def account_host(self) -> str:
        """Where the account proxy must listen for the relay to reach it."""
        return self.network.host_address if self.network else "127.0.0.1"

    @property
    def missing(self) -> dict[str, str]:
        return self.lacks

    def level(self) -> dict:
        user = {"user": self._own.user, "uid": self._own.uid} if self.separate_uid else None
        return levels.level(self.mode, self.limits, self.lacks, self.abi, user)

    def summary(self) -> str:
        return levels.describe(self.level())

    # -- the relay's folders ----------------------------------------------------------------
    def working_copy(self, manifest: RelayFolders) -> WorkingCopy:
        """A fresh copy of the relay's folder (Manifest.code), owned by the slot's uid; the folder itself when
        the sandbox is off. Isolated, the folder is copied once per sandbox (its pristine copy, which no relay
        can reach) and each working copy is an overlay on it: what a relay writes lands in a layer of its own,
        gone with it, and a stack starts in about a millisecond whatever the folder's size."""
        if not self.on:
            return WorkingCopy(manifest.code, manifest.folder)
        home = self._fresh("relays")
        if self.isolated:
            root = self._overlay(self._pristine(manifest.code), home, manifest.code.name)
        else:
            root = self._copy(manifest.code, home / manifest.code.name)
        return WorkingCopy(root, root / manifest.folder.relative_to(manifest.code))

    def _copy(self, source: Path, target: Path) -> Path:
        shutil.copytree(source, target, symlinks=True, ignore=COPY_IGNORE)
        for dirpath, dirnames, filenames in os.walk(target):
            for name in [dirpath] + [os.path.join(dirpath, n) for n in dirnames + filenames]:
                os.chown(name, self._own.uid, self._own.gid, follow_symlinks=False)
        return target

    def _pristine(self, code: Path) -> Path:
        if code not in self._pristines:
            self._pristines[code] = self._copy(code, self._fresh("pristine") / code.name)
        return self._pristines[code]

    def _overlay(self, lower: Path, home: Path, name: str) -> Path:
        upper, work, merged = home / "upper", home / "work", home / name
        for folder in (upper, work, merged):
            folder.mkdir(mode=0o700)
            os.chown(folder, self._own.uid, self._own.gid)
        kernel.mount(
            "overlay",
            str(merged),
            "overlay",
            kernel.MS_NOSUID | kernel.MS_NODEV,
            f"lowerdir={lower},upperdir={upper},workdir={work}",
            layer="mount",
        )
        return merged

    def ledger_dir(self, default: Path) -> Path:
        """A fresh folder for one stack's ledger, owned by the slot's uid (`default` when the sandbox is off)."""
        return self._fresh("ledgers") if self.on else default

    def tmp_dir(self) -> Path | None:
        """A fresh folder for one stack's temporary files: its /tmp, or its TMPDIR without isolation."""
        return self._fresh("tmp") if self.on else None

    def _fresh(self, kind: str) -> Path:
        """A new folder of the slot's home, named at random: a path a relay sees (LEDGER_PATH, its mounts) says
        nothing of the scenario, the test or how many came before."""
        return self._own.folder(kind, secrets.token_hex(8))

    def discard(self, *folders: Path | None) -> None:
        """Remove what a relay wrote in its folders (the sandbox's own only; never a folder of the user's), the
        overlays mounted there first."""
        for folder in folders:
            if self.slot is not None and folder is not None and self.slot.home in folder.parents:
                for mounted in mounts_below(folder):
                    kernel.umount(str(mounted), kernel.MNT_DETACH, layer="mount")
                shutil.rmtree(folder, ignore_errors=True)

    # -- plans ---------------------------------------------------------------------------
    def plan(
        self,
        command: str,
        *,
        copy: WorkingCopy,
        ledger_dir: Path,
        tmp_dir: Path | None,
        connect: tuple[int, ...],
        bind: tuple[int, ...],
        relaxed: bool = False,
        lock_delay_ms: int = 0,
    ) -> Plan:
        """The plan of one command; `relaxed` (a diagnosis) drops the rlimits and nothing else; `lock_delay_ms`
        holds each of its file locks that long (relaychaos.sandbox.seccomp: only where init answers the filter,
        the isolated plans; elsewhere nothing is held)."""
        if not self.on:
            return Plan(cwd=str(copy.cwd))
        rlimits = {} if relaxed else self.limits.rlimits(command, own_uid=self.separate_uid)
        log = LogBudget(str(self.log_budget), self.limits.log_mib << 20)
        rules = self._rules(copy, ledger_dir, tmp_dir, connect, bind)
        if not self.isolated:
            return Plan(
                rlimits=rlimits,
                cwd=str(copy.cwd),
                umask=0o077,
                landlock=rules if self.abi else None,
                seccomp="seccomp" not in self.lacks,
                log=log,
            )
        isolation = Isolation(
            view=self._view(copy, ledger_dir, tmp_dir),
            netns=self.network.path if self.network else None,
            cgroup_procs=self.cgroups.procs() if self.cgroups else (),
        )
        return Plan(
            uid=self._own.uid,
            gid=self._own.gid,
            rlimits=rlimits,
            cwd=str(copy.cwd),
            umask=0o077,
            landlock=rules if self.abi else None,
            seccomp="seccomp" not in self.lacks,
            isolation=isolation,
            ports=Ports(bind=bind, connect=connect),
            log=log,
            lock_delay_ms=lock_delay_ms,
        )

    def _rules(
        self, copy: WorkingCopy, ledger_dir: Path, tmp_dir: Path | None, connect: tuple[int, ...], bind: tuple[int, ...]
    ) -> Rules:
        """A command's Landlock rules: isolated, all of its own view readable; sharing the harness's filesystem, only
        the system's tree, the runtimes and the devices. Its folders and the devices writable either way."""
        if not self.isolated:
            read_only = system_tree()[1] + ("/proc", "/sys") + runtime_paths() + DEVICES
            read_write = tuple(p for p in (str(copy.root), str(tmp_dir) if tmp_dir else None) if p) + DEVICES
        else:
            read_only, read_write = ("/",), (str(copy.root), "/tmp", "/dev/shm") + DEVICES
        return Rules(
            self.abi, read_only=read_only, read_write=read_write, ledger=(str(ledger_dir),), connect=connect, bind=bind
        )

    def _view(self, copy: WorkingCopy, ledger_dir: Path, tmp_dir: Path | None) -> View:
        assert tmp_dir is not None, "an isolated command's /tmp is its stack's tmp_dir() (never None when on)"
        links, system = system_tree()
        runtime = [
            p for p in runtime_paths() if not any(Path(s) == Path(p) or Path(s) in Path(p).parents for s in system)
        ]
        binds = [(p, p, False) for p in system + tuple(runtime)]
        binds += [
            (str(copy.root), str(copy.root), True),
            (str(ledger_dir), str(ledger_dir), True),
            (str(tmp_dir), "/tmp", True),
        ]
        masks = tuple(str(paths.PACKAGE) for _, target, _ in binds if Path(target) in paths.PACKAGE.parents)
        return View(
            root=str(self._view_root),
            binds=tuple(binds),
            links=links,
            masks=masks,
            cgroups=self.cgroups.options if self.cgroups else (),
        )

    def env(
        self, contract: dict[str, str], copy: WorkingCopy, tmp_dir: Path | None, own: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """A command's environment (relaychaos.sandbox.environment): `own`, the relay's [env], with the contract's;
        TMPDIR only without a private /tmp (no root)."""
        tmpdir = str(tmp_dir) if self.on and not self.isolated and tmp_dir is not None else None
        return environment.command_env(contract, own or {}, on=self.on, home=str(copy.root), tmp_dir=tmpdir)

    # -- life ----------------------------------------------------------------------------
    def enter(self) -> None:
        """A supervisor begins to use the sandbox."""
        self._users += 1

    def leave(self) -> int:
        """A supervisor is done: when it was the last, kill every process left in the slot; how many."""
        self._users = max(0, self._users - 1)
        return self.sweep() if self._users == 0 else 0

    def sweep(self) -> int:
        """Kill every process left in the slot: those in its cgroups (no relay can leave them), or without cgroups
        those of its uid (nothing without a slot of its own)."""
        if self.cgroups is not None:
            return self.cgroups.kill()
        return self.slot.sweep() if self.slot else 0

    def close(self) -> None:
        self.sweep()
        for groups in (self.cgroups, self.services):  # the services were stopped before (run.services)
            if groups is not None:
                groups.kill()
                groups.remove()
        self.cgroups = self.services = None
        if self.network is not None:
            self.network.destroy()
            self.network = None
        if self.slot is not None:
            self.slot.release()
            self.slot = None


def clear_abandoned() -> list[int]:
    """Remove what harness processes killed before they could close left of their slots: for each slot no process
    holds (a slot's lock lives as long as its process), its processes, cgroups, network and home. The slots
    cleared. Called by whoever stops harness processes the hard way (a grade past its budget, a Ctrl-C'd run);
    without root there is nothing of the kind to clear."""
    if os.geteuid() != 0:
        return []
    return [n for n in slots.free(slots.base_dir()) if clear_slot(n)]


def clear_slot(n: int) -> bool:
    """Remove whatever of slot n is on the machine (the caller holds its lock); whether there was anything."""
    network, groups = SlotNetwork(n, port_range()), [SlotCgroups.named(name) for name in cgroups.names(n)]
    home = slots.base_dir() / f"slot-{n}"
    if not (
        os.path.exists(network.path)
        or os.path.exists(f"/sys/class/net/{network.host_link}")
        or any(g.exist() for g in groups)
        or home.exists()
    ):
        return False
    for group in groups:
        group.kill()
        group.remove()
    network.destroy()
    uid_filter.remove(n)  # the slot's uid rules beside a Toxiproxy on another host, if any
    slots.clear_home(home)
    return True


@functools.lru_cache(maxsize=1)
def system_tree() -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """(symbolic links, folders) among the system's top folders, as this machine has them (/bin -> usr/bin)."""
    links = tuple((p, os.readlink(p)) for p in SYSTEM if os.path.islink(p))
    folders = tuple(p for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p))
    return links, folders


def runtime_paths() -> tuple[str, ...]:
    """Folders a relay may read beyond the system's: this Python's prefixes and site folders, so that `python` in
    a manifest is the harness's own (contract section 1). Nothing a relay names: its commands are found on its
    own PATH (this Python's folder, then the system's), all within what is bound already."""
    return outermost(list(_harness_runtime()))


@functools.lru_cache(maxsize=1)
def _harness_runtime() -> tuple[str, ...]:
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(os.path.realpath(sys.executable)).parents[1])]
    found += site.getsitepackages()
    return tuple(os.path.realpath(p) for p in found if os.path.exists(p))


def mounts_below(folder: Path) -> list[Path]:
    """The mount points at or below `folder`, deepest first (from /proc/self/mountinfo)."""
    prefix = str(folder).rstrip("/") + "/"
    points = [
        Path(line.split()[4].replace("\\040", " ")) for line in Path("/proc/self/mountinfo").read_text().splitlines()
    ]
    return sorted(
        {p for p in points if str(p) == str(folder) or str(p).startswith(prefix)}, key=lambda p: -len(p.parts)
    )


def outermost(found: list[str]) -> tuple[str, ...]:
    """`found` without the paths inside another of them (a bind of the outer one carries them)."""
    return tuple(sorted(p for p in set(found) if not any(p.startswith(q.rstrip("/") + "/") for q in found if q != p)))
