"""Loopback ports the harness hands out, leased so that no two of its processes ever share one.

    port = lease_port()      # free now, and no other harness process will be given it
    ...                      # bind it (a relay, the fixture, a Toxiproxy listener), kill, restart
    release_port(port)       # when whatever used it is gone for good

Why not `bind(("127.0.0.1", 0))` and close: the port is free only for a moment. Between that close
and the relay's own bind (seconds, for a JVM on a loaded machine), or while a proxy is disabled by
a fault, another test worker could be handed the same port and start its relay or account system
there. The harness would then talk to a stranger: answers with no account call behind them, or
another run's GUIDs landing in this run's account system. Verdicts would change with the load.

So ports come from a range the kernel never hands out by itself (below
`net.ipv4.ip_local_port_range`, so no `bind(0)` or outgoing connection takes one), and each is
held with a byte-range lock in one shared lock file (byte N = port N) for as long as it is
leased. The kernel drops the locks of a process that dies, however it dies. `RELAYCHAOS_PORTS`
(`LOW-HIGH`) overrides the range.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import tempfile
import threading
from pathlib import Path

from relaychaos import options
from relaychaos.errors import HarnessError

LOCK_NAME = "relaychaos-ports.lock"
DEFAULT_RANGE = (20000, 29999)
MIN_RANGE = 500

_held: set[int] = set()
_lock = threading.Lock()
_fd: int | None = None
_fd_pid: int | None = None
_random = random.Random()


def lease_port() -> int:
    """A loopback TCP port that is free now and leased to this process until release_port().

    HarnessError when every port of the range is taken (by leases or by listeners).
    """
    low, high = port_range()
    with _lock:
        fd = _lock_fd()
        size = high - low + 1
        start = _random.randrange(size)
        for i in range(size):
            port = low + (start + i) % size
            if port in _held:
                continue
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
            except OSError:
                continue  # leased by another harness process
            if _bindable(port):
                _held.add(port)
                return port
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, port)
    raise HarnessError(
        f"no free loopback port in {low}-{high}: every one is leased or in use",
        fix="stop leftover relaychaos runs, or set RELAYCHAOS_PORTS=LOW-HIGH to a wider range",
    )


def release_port(port: int) -> None:
    """Give a leased port back (a no-op for a port this process does not hold)."""
    with _lock:
        if port in _held:
            _held.discard(port)
            fcntl.lockf(_lock_fd(), fcntl.LOCK_UN, 1, port)


def held_ports() -> frozenset[int]:
    """The ports this process holds now (for tests and for leak checks)."""
    with _lock:
        return frozenset(_held)


def port_range() -> tuple[int, int]:
    """The range leases come from: RELAYCHAOS_PORTS, or a stretch the kernel's ephemeral range leaves out."""
    text = (options.environment(options.PORTS) or "").strip()
    if text:
        try:
            low, high = (int(part) for part in text.split("-"))
            if not 1024 <= low < high <= 65535:
                raise ValueError
        except ValueError:
            raise HarnessError(
                f"RELAYCHAOS_PORTS={text!r} is not a port range",
                where="the environment",
                fix="write it as LOW-HIGH with 1024 <= LOW < HIGH <= 65535, e.g. 20000-29999",
            ) from None
        return low, high
    ephemeral = _ephemeral_range()
    if ephemeral is None or not _overlaps(DEFAULT_RANGE, ephemeral):
        return DEFAULT_RANGE
    e_low, e_high = ephemeral
    below, above = (1024, e_low - 1), (e_high + 1, 65535)
    best = max((below, above), key=lambda r: r[1] - r[0])
    if best[1] - best[0] + 1 >= MIN_RANGE:
        return best[0], min(best[1], best[0] + 9999)
    return DEFAULT_RANGE  # the kernel may hand these out too; the leases still keep harness processes apart


def _ephemeral_range() -> tuple[int, int] | None:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return None


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _bindable(port: int) -> bool:
    """Whether nothing holds the port: no listener, and no lingering connection (bound without SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _lock_fd() -> int:
    """The shared lock file, opened once per process (closing any descriptor of it would drop every lock)."""
    global _fd, _fd_pid
    if _fd is None or _fd_pid != os.getpid():
        path = Path(options.environment(options.PORT_LOCK) or Path(tempfile.gettempdir()) / LOCK_NAME)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        with contextlib.suppress(OSError):  # OSError: created by another user, who made it shareable
            os.fchmod(fd, 0o666)  # other users' harnesses share it (a umask would narrow it)
        if _fd_pid != os.getpid():
            _held.clear()  # a forked child holds none of its parent's locks
        _fd, _fd_pid = fd, os.getpid()
    return _fd
