"""Red team, class 8: reading or writing other processes' memory.

ptrace (attach to its init, or trace its own child), process_vm_readv, /proc/<pid>/mem and /proc/<pid>/environ
of its init (root, holding the plan), pidfd_getfd (steal an fd of another process), and the same against
every pid number in the host's range it could name.
"""

import ctypes
import os
import signal
import sys
import time

from .evidence import Attack, Refused, is_serve, syscall, whoami
from .reference.__main__ import main

NAME = "ptrace_mem"
ATTEMPTS = ("ptrace-init", "ptrace-child", "process-vm-readv", "proc-mem", "pidfd-getfd")
LIMITS = {"ready_timeout_s": 30}  # its attack runs before serve answers
A = Attack(NAME)
SYS_PTRACE, SYS_PROCESS_VM_READV, SYS_PIDFD_OPEN, SYS_PIDFD_GETFD = 101, 310, 434, 438
PTRACE_ATTACH, PTRACE_DETACH = 16, 17


def ptrace_init():
    syscall(SYS_PTRACE, PTRACE_ATTACH, 1, 0, 0)
    syscall(SYS_PTRACE, PTRACE_DETACH, 1, 0, 0)
    return "attached to its init (root)"


def ptrace_child():
    pid = os.fork()
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    try:
        syscall(SYS_PTRACE, PTRACE_ATTACH, pid, 0, 0)
        syscall(SYS_PTRACE, PTRACE_DETACH, pid, 0, 0)
        return f"attached to its own child {pid} (ptrace is open to it)"
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def vm_readv():
    buf = ctypes.create_string_buffer(64)
    local = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 64)
    remote = (ctypes.c_void_p * 2)(0x400000, 64)
    for pid in (1, os.getppid()):
        try:
            syscall(SYS_PROCESS_VM_READV, pid, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
            return f"read 64 bytes of pid {pid}'s memory"
        except OSError as e:
            last = e
    raise last


def proc_mem():
    said = []
    for pid in ("1", str(os.getppid())):
        for name in ("mem", "environ", "maps"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as f:
                    data = f.read(64)
                if pid == "1" or os.stat(f"/proc/{pid}").st_uid != os.getuid():
                    return f"read /proc/{pid}/{name} of a root process: {data[:40]!r}"
            except OSError as e:
                said.append(f"/proc/{pid}/{name}: {e.strerror}")
    raise Refused("; ".join(said))


def pidfd_getfd():
    fd = syscall(SYS_PIDFD_OPEN, 1, 0)
    try:
        got = syscall(SYS_PIDFD_GETFD, fd, 0, 0)
        os.close(got)
        return "took fd 0 of its init"
    finally:
        os.close(fd)


def attack() -> None:
    A.run("ptrace-init", ptrace_init)
    A.run("ptrace-child", ptrace_child)
    A.run("process-vm-readv", vm_readv)
    A.run("proc-mem", proc_mem)
    A.run("pidfd-getfd", pidfd_getfd)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]):
        attack()  # before serve answers: the scenario waits for it
    sys.exit(main(sys.argv[1:]))
