"""What a harness process that has ended may have left of its sandbox slots: for the tests that say nothing is.

A slot's resources are named for its number N: the network namespace relaychaos-sN (with its
veth pair), the cgroups relaychaos-sN, the home /run/relaychaos/slot-N (a tmpfs), and processes
of its uid relaychaos-relay-N. A slot whose lock nobody holds must have none of them, unless
they are older than `since` (left by a harness killed before this test began, and removed by
whoever claims the slot next).
"""
from __future__ import annotations

import fcntl
import os
import pwd
from pathlib import Path

from relaychaos.sandbox import cgroups, slots
from relaychaos.sandbox.netns import NETNS_DIR


def free_slots() -> list[int]:
    """Slot numbers whose lock no process holds now."""
    free = []
    for lock in sorted(slots.ROOT_BASE.glob("slot-*.lock")):
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            free.append(int(lock.stem.split("-")[1]))
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
    return free


def _young(path: Path, since: float) -> bool:
    try:
        return path.lstat().st_mtime >= since or path.lstat().st_ctime >= since
    except OSError:
        return False


def leftovers(since: float) -> list[str]:
    """Every resource of a free slot made at or after `since` (a time.time())."""
    found = []
    hierarchies = cgroups.hierarchies()
    for n in free_slots():
        netns = Path(NETNS_DIR) / f"relaychaos-s{n}"
        found += [f"network namespace {netns}"] if _young(netns, since) else []
        for h in hierarchies.values():
            group = h.mount / h.own.lstrip("/") / f"relaychaos-s{n}"
            found += [f"cgroup {group}"] if _young(group, since) else []
        home = slots.ROOT_BASE / f"slot-{n}"
        found += [f"home {home}"] if home.exists() and _young(home, since) else []
        try:
            uid = pwd.getpwnam(f"{slots.USER_PREFIX}{n}").pw_uid
        except KeyError:
            continue
        found += [f"pid {p} of uid {uid}" for p in slots.uid_processes(uid)]
    return found
