"""The resources of one sandbox slot: a cgroup per controller (memory, pids, cpu) for the relay as a whole.

    groups = SlotCgroups.create("relaychaos-s3", memory_mib=1024, tasks=512, cpu_shares=1024)
    plan: isolation.cgroup_procs = groups.procs()     # each command's init joins them (the wrapper)
    groups.kill(); groups.remove()

Every process of every command of the slot (both `serve`s, the batch runs, whatever they
fork) is in these groups, so the limits hold for the relay as a whole: memory counts shared
memory, tmpfs pages and the page cache it causes; tasks count threads and processes. The
groups sit under the harness's own cgroup, so a limit put around the harness (a grading
container) holds for the relay too. cgroup v1, as root, with the controllers mounted where
/proc/self/mountinfo says; `missing()` says why they cannot be had.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path

from relaychaos.errors import SandboxError
from relaychaos.sandbox.slots import kill_until_gone

CONTROLLERS = ("memory", "pids", "cpu")
# The harness's own servers of a slot (its account system and Toxiproxy) in groups of their own beside the relay's:
# what a relay's traffic makes them hold is bounded (a million-account night's account system holds about 300 MiB)
SERVICES_MIB, SERVICES_TASKS = 1024, 1024


def names(slot: int) -> tuple[str, str]:
    """(the relay's groups, its services' groups) of slot number `slot`."""
    return f"relaychaos-s{slot}", f"relaychaos-s{slot}-services"


@dataclass(frozen=True)
class Hierarchy:
    """A mounted v1 hierarchy holding `controller`: its mount options (e.g. 'cpu,cpuacct'), where it is
    mounted, and this process's own cgroup in it."""

    controller: str
    options: str
    mount: Path
    own: str


def hierarchies() -> dict[str, Hierarchy]:
    """The v1 hierarchies of CONTROLLERS this process sees (those missing are left out)."""
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        for name in names.split(","):
            own[name] = path
    found = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        sep = fields.index("-")
        if fields[sep + 1] != "cgroup":
            continue
        held = [o for o in fields[sep + 3].split(",") if o in CONTROLLERS or o == "cpuacct"]
        for name in held:
            if name in CONTROLLERS and name in own and fields[3] == "/":
                found[name] = Hierarchy(name, ",".join(n for n in held), Path(fields[4]), own[name])
    return found


def missing() -> str | None:
    """Why the slot's cgroups cannot be had here (None: they can)."""
    if os.geteuid() != 0:
        return "the harness does not run as root"
    absent = [c for c in CONTROLLERS if c not in hierarchies()]
    if absent:
        return f"no cgroup v1 hierarchy for {', '.join(absent)} is mounted (see /proc/self/mountinfo)"
    return None


@dataclass
class SlotCgroups:
    """The cgroups of one slot (see the module doc)."""

    name: str
    groups: dict[str, Path]
    options: tuple[str, ...]  # the hierarchies' mount options, for the relay's own /sys/fs/cgroup

    @classmethod
    def named(cls, name: str) -> SlotCgroups:
        """The groups of that name under the harness's own cgroups, whether they exist or not."""
        found = hierarchies()
        return cls(
            name,
            {c: h.mount / h.own.lstrip("/") / name for c, h in found.items()},
            tuple(sorted({h.options for h in found.values()})),
        )

    def exist(self) -> bool:
        return any(path.is_dir() for path in self.groups.values())

    @classmethod
    def create(cls, name: str, *, memory_mib: int, tasks: int, cpu_shares: int) -> SlotCgroups:
        """Make the slot's groups afresh under the harness's own (a killed run's are emptied and removed)."""
        made = cls.named(name)
        made.kill()
        made.remove()
        try:
            for path in made.groups.values():
                path.mkdir()
            made.set(memory_mib=memory_mib, tasks=tasks, cpu_shares=cpu_shares)
        except BaseException as e:  # a Ctrl-C half-way included: no group of the slot is left behind
            made.remove()
            if not isinstance(e, OSError):
                raise
            raise SandboxError(
                f"could not make the cgroup {name}: {e}",
                fix="run as root with the v1 memory, pids and cpu controllers mounted, or use "
                "--sandbox off for a relay you trust",
            ) from None
        return made

    def procs(self) -> tuple[str, ...]:
        return tuple(str(p / "cgroup.procs") for p in self.groups.values())

    def set(self, *, memory_mib: int | None = None, tasks: int | None = None, cpu_shares: int | None = None) -> None:
        """Change the limits (memory in MiB for the relay as a whole, tasks, CPU weight)."""
        if memory_mib is not None and "memory" in self.groups:
            mem = self.groups["memory"]
            limit, both = str(memory_mib << 20), mem / "memory.memsw.limit_in_bytes"
            order = ["memory.limit_in_bytes"] + (["memory.memsw.limit_in_bytes"] if both.exists() else [])
            if both.exists():
                current = _read(mem / "memory.limit_in_bytes")
                if current is None:
                    raise SandboxError(
                        f"could not read the memory limit of the cgroup {mem}",
                        where=str(mem / "memory.limit_in_bytes"),
                        fix="run as root with the v1 memory controller mounted, or use --sandbox off for a "
                        "relay you trust",
                    )
                if (memory_mib << 20) > int(current):
                    order.reverse()  # memory + swap may never be below memory alone
            for key in order:
                (mem / key).write_text(limit)
        if tasks is not None and "pids" in self.groups:
            (self.groups["pids"] / "pids.max").write_text(str(tasks))
        if cpu_shares is not None and "cpu" in self.groups:
            (self.groups["cpu"] / "cpu.shares").write_text(str(cpu_shares))

    def join(self, pid: int) -> None:
        """Put process `pid` (and the threads and children it makes from now on) into every group."""
        for procs in self.procs():
            with open(procs, "w") as f:
                f.write(str(pid))

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in the memory group for reaching its limit."""
        said = _read(self.groups["memory"] / "memory.oom_control") if "memory" in self.groups else None
        return next((int(line.split()[1]) for line in (said or "").splitlines() if line.startswith("oom_kill ")), 0)

    def usage(self) -> tuple[int, int]:
        """(peak memory in MiB since the last reset, tasks now) of the relay as a whole."""
        mem = self.groups.get("memory")
        peak = int(_read(mem / "memory.max_usage_in_bytes") or 0) >> 20 if mem else 0
        pids = self.groups.get("pids")
        return peak, int(_read(pids / "pids.current") or 0) if pids else 0

    def reset_peak(self) -> None:
        if "memory" in self.groups:
            (self.groups["memory"] / "memory.max_usage_in_bytes").write_text("0")

    def pids(self) -> list[int]:
        """Every process in the slot's groups now."""
        found: set[int] = set()
        for path in self.groups.values():
            found.update(_procs(path))
        return sorted(found)

    def kill(self) -> int:
        """SIGKILL every process in the groups, again until none is left; how many there were."""
        return kill_until_gone(self.pids)

    def remove(self) -> None:
        """Remove the groups (empty them first with kill()); a process that joined one meanwhile (a command being
        started as the slot closes) is killed in turn; a group still busy after 5 s is left."""
        for path in self.groups.values():
            deadline = time.monotonic() + 5.0
            while path.exists():
                try:
                    path.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    kill_until_gone(functools.partial(_procs, path))
                    time.sleep(0.02)


def _procs(group: Path) -> list[int]:
    """The processes in one group now."""
    return [int(p) for p in (_read(group / "cgroup.procs") or "").split()]


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
