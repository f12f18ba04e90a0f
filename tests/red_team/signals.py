"""Red team, class 7: signals to the harness, the account system, Toxiproxy, other relays.

Whom can it name and signal? Its init (PID 1 of its namespace, root), every pid number (kill(pid, 0) over the
whole pid range: only the relay's own should answer), kill(-1) (every process it may signal), its process
group (which the exec wrapper's processes share), a pidfd, and the indirect ways: F_SETOWN to make the kernel
send SIGIO/SIGURG to another process or group. Only signal 0 (a permission check) or SIGCONT (harmless) are
sent to what answers, then SIGTERM to init if that was allowed.
"""

import fcntl
import os
import signal
import socket
import sys

from .evidence import Attack, Refused, syscall, whoami
from .reference.__main__ import main

NAME = "signals"
ATTEMPTS = ("init", "pid-range", "kill-all", "process-group", "pidfd", "sigio-owner")
LIMITS = {"ready_timeout_s": 30}  # its attack runs before serve answers
A = Attack(NAME)
SYS_PIDFD_OPEN, SYS_PIDFD_SEND_SIGNAL = 434, 424


def own() -> set[int]:
    return {int(p) for p in os.listdir("/proc") if p.isdigit()}


def init():
    os.kill(1, 0)
    os.kill(1, signal.SIGCONT)
    return "its init (PID 1, root) accepted a signal from the relay"


def pid_range():
    mine, other = own(), []
    pid_max = min(int(open("/proc/sys/kernel/pid_max").read()), 1 << 16)  # a pid namespace numbers from 1
    for pid in range(2, pid_max + 1):
        if pid in mine:
            continue
        try:
            os.kill(pid, 0)
            other.append(pid)
        except ProcessLookupError:
            continue
        except PermissionError:
            other.append(-pid)  # exists, not ours to signal: still named
    if [p for p in other if p > 0]:
        return f"pids it may signal beyond its own: {[p for p in other if p > 0][:20]}"
    if other:
        return f"pids it can see beyond its own (not signal): {[-p for p in other][:20]}"
    raise Refused(f"no pid beyond its own {sorted(mine)} in 2..{pid_max}")


def kill_all():
    """kill(-1, 0): is there any process it may signal beyond its own?"""
    others = own() - {os.getpid()}
    try:
        os.kill(-1, 0)
    except ProcessLookupError:
        raise Refused(f"kill(-1) finds no process to signal (its own others: {sorted(others)})") from None
    if not others:
        return "kill(-1, 0) found a process to signal, and the relay has no other process of its own"
    raise Refused(f"kill(-1) reaches what the relay may signal: its own {sorted(others)}")


def process_group():
    pgid = os.getpgrp()
    members = [p for p in own() if os.getpgid(p) == pgid]
    os.killpg(pgid, 0)
    raise Refused(f"its process group {pgid} names only {members} in its namespace")


def pidfd():
    fd = syscall(SYS_PIDFD_OPEN, 1, 0)
    try:
        syscall(SYS_PIDFD_SEND_SIGNAL, fd, 0, 0, 0)
    finally:
        os.close(fd)
    return "pidfd_send_signal to its init (root) allowed"


def sigio_owner():
    """Ask the kernel to send SIGURG/SIGIO to init, then to the group, by making a socket ready."""
    a, b = socket.socketpair()
    results = []
    for owner in (1, -1, -os.getpgrp()):
        try:
            fcntl.fcntl(a.fileno(), fcntl.F_SETOWN, owner)
            fcntl.fcntl(a.fileno(), fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)
            b.send(b"x")
            a.recv(1)
            results.append(f"owner {owner}: accepted")
        except OSError as e:
            results.append(f"owner {owner}: {e.strerror}")
    a.close()
    b.close()
    raise Refused(
        f"{'; '.join(results)}; init still runs (had SIGIO reached it, it would have died, and this relay with it)"
    )


def attack() -> None:
    signal.signal(signal.SIGCONT, signal.SIG_DFL)
    A.run("init", init)
    A.run("pid-range", pid_range)
    A.run("kill-all", kill_all)
    A.run("process-group", process_group)
    A.run("pidfd", pidfd)
    A.run("sigio-owner", sigio_owner)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    signal.signal(signal.SIGIO, signal.SIG_IGN)
    signal.signal(signal.SIGURG, signal.SIG_IGN)
    attack()  # before the command does its work (serve: before it answers)
    sys.exit(main(sys.argv[1:]))
