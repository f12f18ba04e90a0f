"""Which processes hold the socket listening on a loopback port: so the harness knows it talks to its own relay.

    stranger_on(port, pid)  ->  None                 the listener is pid's, or its group's, or cannot be told
                            ->  "pid 4242 (java)"    someone else listens there

A relay that answers /health on its port is taken to be the process the supervisor started only
after this says so. Leased ports (relaychaos.ports) make a stranger there unlikely; this
turns the rest into a clear error instead of verdicts about somebody else's relay.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from relaychaos.stack.accept_queue import listeners


def stranger_on(port: int, pid: int, netns: str | None = None) -> str | None:
    """A description of the processes that hold the socket listening on `port` (in this network namespace, or
    the one at `netns`) and are neither `pid`, in its process group, nor its descendants; None when every holder
    is pid's (or where the kernel or /proc cannot tell)."""
    inodes = _listener_inodes(port, netns)
    if not inodes:
        return None
    strangers = [h for h in sorted(_holders(inodes)) if not _belongs(h, pid)]
    return ", ".join(f"pid {h} ({_comm(h)})" for h in strangers[:3]) or None


def _listener_inodes(port: int, netns: str | None) -> set[int]:
    found: set[int] = set()
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            found.update(inode for sport, _, _, inode in listeners(family, netns) if sport == port and inode)
        except OSError:
            return set()
    return found


def _holders(inodes: set[int]) -> set[int]:
    """Pids with a descriptor on one of the socket inodes (those whose /proc/PID/fd this process may read)."""
    wanted = {f"socket:[{inode}]" for inode in inodes}
    holders: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with os.scandir(f"/proc/{entry.name}/fd") as fds:
                for fd in fds:
                    try:
                        if os.readlink(fd.path) in wanted:
                            holders.add(int(entry.name))
                            break
                    except OSError:
                        continue
        except OSError:
            continue
    return holders


def _belongs(holder: int, pid: int) -> bool:
    """holder is pid, in pid's process group, or a descendant of pid."""
    try:
        if holder == pid or os.getpgid(holder) == pid:
            return True
    except OSError:
        return False
    seen = 0
    while holder > 1 and seen < 64:
        holder = _parent(holder)
        if holder == pid:
            return True
        seen += 1
    return False


def _parent(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"
