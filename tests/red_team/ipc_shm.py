"""Red team, class 3: SysV IPC and shared memory.

Memory the cgroup might not see (before the first `serve` of each stack answers): a SysV shared memory
segment and an anonymous MAP_SHARED mapping of 1.5 GiB (past memory_mib = 1024), touched page by page in a
child; /dev/shm past its size. Objects meant to outlive
the command and to carry messages between two commands or two submissions: a SysV message queue, semaphore
set and shm segment and a POSIX message queue at fixed keys/names, left behind on purpose with a note of who
made them; each command first looks for a note left by someone else.
"""

import contextlib
import ctypes
import mmap
import os
import signal
import sys
import time

from .evidence import Attack, Refused, first_time, is_serve, libc, syscall, whoami
from .reference.__main__ import main

NAME = "ipc_shm"
ATTEMPTS = (
    "sysv-shm-beyond-memory",
    "map-shared-beyond-memory",
    "dev-shm-beyond-size",
    "msg-queue-shared",
    "shm-segment-shared",
    "semaphore-shared",
    "posix-mqueue-shared",
)
A = Attack(NAME)
KEY = 0x52544D00  # "RTM\0": the test looks for these keys on the machine afterwards
GIB = 1 << 30
MIB = 1 << 20
LIMITS = {"ready_timeout_s": 30}
IPC_CREAT, IPC_EXCL, IPC_RMID, IPC_NOWAIT = 0o1000, 0o2000, 0, 0o4000  # IPC_EXCL: EEXIST = it outlived its maker
SYS_SHMGET, SYS_SHMAT, SYS_SHMCTL, SYS_MSGGET, SYS_MSGSND, SYS_MSGRCV, SYS_SEMGET = 29, 30, 31, 68, 69, 70, 64
SYS_MQ_OPEN, SYS_MQ_TIMEDSEND, SYS_MQ_TIMEDRECEIVE = 240, 242, 243
NOTE = f"{NAME} pid {os.getpid()} at {time.time():.3f}"


def touch_in_child(make_mapping, size: int) -> str:
    """Touch `size` bytes of a shared mapping in a child; how far it got before it was stopped."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            addr = make_mapping(size)
            for offset in range(0, size, 16 * MIB):
                end = min(size, offset + 16 * MIB)
                ctypes.memset(addr + offset, 1, end - offset)
                os.write(w, f"{end // MIB}\n".encode())
        except BaseException as e:  # noqa: BLE001 - said to the parent
            os.write(w, f"E {type(e).__name__}: {e}\n".encode())
        os._exit(0)
    os.close(w)
    lines = b""
    while chunk := os.read(r, 4096):
        lines += chunk
    _, status = os.waitpid(pid, 0)
    os.close(r)
    said = lines.decode().split()
    reached = max([int(x) for x in said if x.isdigit()] or [0])
    how = f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
    errors = " ".join(x for x in lines.decode().splitlines() if x.startswith("E "))
    if reached * MIB >= size:
        return f"touched all {reached} MiB of shared memory (memory_mib is 1024)"
    raise Refused(f"stopped after {reached} MiB: {how} {errors}".strip())


def sysv_mapping(size: int):
    shmid = syscall(SYS_SHMGET, 0, size, IPC_CREAT | 0o600)  # IPC_PRIVATE
    addr = libc().shmat(shmid, None, 0)
    libc().shmctl(shmid, IPC_RMID, None)  # gone once detached
    if addr in (-1, 0xFFFFFFFFFFFFFFFF):
        raise OSError(ctypes.get_errno(), "shmat")
    return addr


_maps = []


def anon_shared(size: int) -> int:
    _maps.append(mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS))
    return ctypes.addressof(ctypes.c_char.from_buffer(_maps[-1]))


def dev_shm():
    path, written = "/dev/shm/red-team-fill", 0
    chunk = b"\x02" * MIB
    try:
        with open(path, "wb") as f:
            while written < 256 * MIB:
                f.write(chunk)
                f.flush()
                written += MIB
    except OSError as e:
        raise Refused(f"{e.strerror} after {written // MIB} MiB") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return f"wrote {written // MIB} MiB to /dev/shm"


def msg_queue():
    qid = syscall(SYS_MSGGET, KEY + 1, IPC_CREAT | 0o666)
    buf = ctypes.create_string_buffer(8 + 512)
    found = []
    while True:
        try:
            n = syscall(SYS_MSGRCV, qid, ctypes.addressof(buf), 512, 0, IPC_NOWAIT)
        except OSError:
            break
        found.append(buf.raw[8 : 8 + n].decode(errors="replace"))
    note = NOTE.encode()
    msg = ctypes.create_string_buffer(ctypes.c_long(1).value.to_bytes(8, "little") + note, 8 + len(note))
    syscall(SYS_MSGSND, qid, ctypes.addressof(msg), len(note), IPC_NOWAIT)
    syscall(SYS_MSGSND, qid, ctypes.addressof(msg), len(note), IPC_NOWAIT)  # one to find, one to leave
    others = [m for m in found if m != NOTE]
    if others:
        return f"message queue {KEY + 1:#x} held a note from someone else: {others[0]!r}"
    raise Refused(f"queue {KEY + 1:#x} made here was empty of others' notes; two notes left in it")


def shm_segment():
    size = 4096
    shmid = syscall(SYS_SHMGET, KEY + 2, size, IPC_CREAT | 0o666)
    addr = libc().shmat(shmid, None, 0)
    if addr in (-1, 0xFFFFFFFFFFFFFFFF):
        raise OSError(ctypes.get_errno(), "shmat")
    page = (ctypes.c_char * size).from_address(addr)
    before = bytes(page[:200]).rstrip(b"\0").decode(errors="replace")
    note = NOTE.encode()
    page[: len(note)] = note
    if before and before != NOTE:
        return f"shm segment {KEY + 2:#x} held a note from someone else: {before!r}"
    raise Refused(f"segment {KEY + 2:#x} was new; a note left in it")


def semaphores_attempt():
    try:
        syscall(SYS_SEMGET, KEY + 3, 4, IPC_CREAT | IPC_EXCL | 0o666)
    except FileExistsError:
        return f"semaphore set {KEY + 3:#x} already existed: made by another command or submission"
    raise Refused(f"semaphore set {KEY + 3:#x} was new; left behind")


def posix_mqueue():
    name = ctypes.create_string_buffer(b"red-team-ipc")
    attr = (ctypes.c_long * 8)(0, 10, 256, 0)
    mqd = syscall(
        SYS_MQ_OPEN, ctypes.addressof(name), os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, 0o666, ctypes.addressof(attr)
    )
    buf = ctypes.create_string_buffer(256)
    found = []
    while True:
        try:
            n = syscall(SYS_MQ_TIMEDRECEIVE, mqd, ctypes.addressof(buf), 256, 0, 0)
        except OSError:
            break
        found.append(buf.raw[:n].decode(errors="replace"))
    note = ctypes.create_string_buffer(NOTE.encode())
    for _ in range(2):
        syscall(SYS_MQ_TIMEDSEND, mqd, ctypes.addressof(note), len(NOTE), 0, 0)
    others = [m for m in found if m != NOTE]
    if others:
        return f"POSIX queue /red-team-ipc held a note from someone else: {others[0]!r}"
    raise Refused("POSIX queue /red-team-ipc was empty of others' notes; two left in it")


def attack() -> None:
    for attempt, fn in (
        ("msg-queue-shared", msg_queue),
        ("shm-segment-shared", shm_segment),
        ("semaphore-shared", semaphores_attempt),
        ("posix-mqueue-shared", posix_mqueue),
    ):
        A.run(attempt, fn)


def memory() -> None:
    A.run("dev-shm-beyond-size", dev_shm)
    A.run("sysv-shm-beyond-memory", touch_in_child, sysv_mapping, 3 * GIB // 2)
    A.run("map-shared-beyond-memory", touch_in_child, anon_shared, 3 * GIB // 2)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    libc().shmat.restype = ctypes.c_void_p
    libc().shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
    attack()
    if is_serve(sys.argv[1:]) and first_time(NAME):
        memory()
    sys.exit(main(sys.argv[1:]))
