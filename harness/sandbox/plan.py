"""What one command may do, as the exec wrapper receives it (JSON on its command line).

A plan holds no secret (it is visible in /proc like any argv) and nothing the wrapper
must look up: the harness resolves uids, ports, paths and cgroups before it spawns. The
wrapper reads the JSON as plain dicts, so that it imports no package. An empty plan only
ties the child's life to the harness (the harness's own servers run so).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

WRAPPER = str(Path(__file__).with_name("__main__.py"))
RLIMITS = ("nproc", "data", "nofile", "fsize", "core", "cpu")  # resource.RLIMIT_<NAME>


@dataclass(frozen=True)
class View:
    """The relay's filesystem (view.py): `root` is an empty folder to build it on; binds are (real path, where it
    appears, writable); links (path, target) as the machine has them; masks are hidden under an empty tmpfs;
    cgroups are the v1 hierarchies mounted (read-only) under /sys/fs/cgroup."""

    root: str
    binds: tuple[tuple[str, str, bool], ...]
    links: tuple[tuple[str, str], ...] = ()
    masks: tuple[str, ...] = ()
    shm_mib: int = 64
    cgroups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Isolation:
    """The namespaces of one command: a PID, mount, IPC, UTS (and cgroup) namespace of its own, the slot's
    network namespace (`netns`, a path under /run/netns), and the slot's cgroups (their cgroup.procs files)."""

    view: View
    netns: str | None = None
    cgroup_procs: tuple[str, ...] = ()
    hostname: str = "relay"


@dataclass(frozen=True)
class Rules:
    """Landlock (landlock.py) at ABI `abi`: paths read-only, read-write, or as the ledger's folder; TCP ports."""

    abi: int
    read_only: tuple[str, ...] = ()
    read_write: tuple[str, ...] = ()
    ledger: tuple[str, ...] = ()
    connect: tuple[int, ...] = ()
    bind: tuple[int, ...] = ()


@dataclass(frozen=True)
class Ports:
    """The TCP ports a command may bind (and listen on) and connect to: its init looks at every such call against
    them (notify.py), whether or not Landlock, whose Rules hold the same ports, can enforce them here."""

    bind: tuple[int, ...] = ()
    connect: tuple[int, ...] = ()


@dataclass(frozen=True)
class LogBudget:
    """The submission's log bytes: `cap` in all, counted in the file `budget` (logpump.py)."""

    budget: str
    cap: int


@dataclass(frozen=True)
class Plan:
    """The layers to apply before exec (see the module doc)."""

    parent: int = field(default_factory=os.getpid)  # the child is SIGKILLed when its spawning thread dies
    uid: int | None = None
    gid: int | None = None
    rlimits: dict[str, int] = field(default_factory=dict)  # RLIMITS name -> soft = hard limit
    cwd: str | None = None
    umask: int | None = None
    landlock: Rules | None = None
    seccomp: bool = False
    isolation: Isolation | None = None
    ports: Ports | None = None  # looked at by init (isolated plans only): None, no port is looked at
    log: LogBudget | None = None
    lock_delay_ms: int = 0  # each file lock held this long by init (notify.Listener; isolated plans only)

    def dumps(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    def wrap(self, argv: list[str]) -> list[str]:
        """The command line that applies this plan and then execs argv."""
        return [sys.executable, "-I", "-S", WRAPPER, self.dumps(), "--", *argv]
