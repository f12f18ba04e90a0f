"""Whose a proxy is: each proxy name the harness makes starts with its process's tag, so that a run can remove the
proxies a killed run left on a server it shares (TOXIPROXY_URL) and never a live run's.

    proxy_owner.prefix("happy-path")   # 'rc-3f09a1c2-41377-8812345-1-happy-path' (tag, stack number, name)
    proxy_owner.sweep(control)         # the names of dead runs' proxies, removed from that server

A pid names a process within one pid namespace of one boot only, and its start time as /proc gives it depends on the
reader's time namespace, so a tag holds a hash of all three (the boot id and the namespaces' inodes: `space`), the
pid, and the process's start time in clock ticks since boot (a pid used again by another process is told apart). A
proxy is a dead run's when its space is this process's and no process with its pid and start time is alive. A proxy
of another machine or container (another space), or one whose name has no tag, is never touched.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from relaychaos.errors import ToxiproxyConflict
from relaychaos.stack.toxiproxy_control import Toxiproxy

_TAG = re.compile(r"rc-([0-9a-f]{8})-([0-9]+)-([0-9]+)-")
_stack_numbers = itertools.count(1)


@dataclass(frozen=True)
class Owner:
    """The process a proxy's name says made it."""

    space: str  # the boot and pid namespace its pid belongs to
    pid: int
    start: int  # its start time, in clock ticks after boot

    @property
    def tag(self) -> str:
        return f"rc-{self.space}-{self.pid}-{self.start}-"


@functools.cache
def space() -> str:
    """This process's boot, pid namespace and time namespace (a start time read in /proc is shifted by the reader's
    boot-time offset), as 8 hex digits."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    spaces = [os.stat(f"/proc/self/ns/{ns}").st_ino for ns in ("pid", "time") if os.path.exists(f"/proc/self/ns/{ns}")]
    return hashlib.sha256(f"{boot}:{spaces}".encode()).hexdigest()[:8]


def started(pid: int) -> int | None:
    """When process `pid` of this pid namespace started (clock ticks after boot); None when there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[19])  # field 22, starttime; the name in () may hold spaces


def this_process() -> Owner:
    pid = os.getpid()
    return Owner(space(), pid, started(pid) or 0)


def prefix(name: str) -> str:
    """A new stack's proxy-name prefix: this process's tag, the stack's number in the process, and its name (what
    Toxiproxy's names allow of it, at most 40 characters)."""
    return f"{this_process().tag}{next(_stack_numbers)}-{re.sub(r'[^A-Za-z0-9_-]', '_', name)[:40]}"


def owner_of(name: str) -> Owner | None:
    """The owner a proxy's name gives, or None for a name without a tag."""
    found = _TAG.match(name)
    return Owner(found[1], int(found[2]), int(found[3])) if found else None


def dead(owner: Owner) -> bool:
    """Whether `owner` is a process of this machine's space that is no longer running. A process whose /proc entry
    this one may not read (another user's, under `hidepid`) but that signal 0 finds is taken as alive."""
    if owner.space != space():
        return False
    start = started(owner.pid)
    if start is not None:
        return start != owner.start
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # there, and not ours to look at
        return False
    return False


def sweep(control: Toxiproxy) -> list[str]:
    """Remove from the server every proxy whose owner is dead (see the module doc); the names removed. A proxy
    another run removes first is not counted."""
    removed = []
    for name in control.proxy_names():
        owner = owner_of(name)
        if owner is not None and dead(owner):
            with contextlib.suppress(ToxiproxyConflict):  # NotFound: another worker's sweep took it
                control.destroy(name)
                removed.append(name)
    return removed
