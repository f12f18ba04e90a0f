"""The Linux calls the exec wrapper makes that Python's os module lacks, through libc (ctypes).

Stdlib only: the wrapper runs under `python -I -S` and imports its sibling modules by
path. Every failure raises LayerError(layer, why), which the wrapper prints as one line
naming the layer before it exits 126: a command never runs with less than its plan.
"""

from __future__ import annotations

import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# sched.h / linux/mount.h / linux/prctl.h
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x10000000, 0x20000000, 0x40000000
CLONE_NEWTIME = 0x00000080
NAMESPACE_FLAGS = (
    CLONE_NEWNS
    | CLONE_NEWCGROUP
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWUSER
    | CLONE_NEWPID
    | CLONE_NEWNET
    | CLONE_NEWTIME
)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE = 1, 38, 4
SYS_PIVOT_ROOT, SYS_SECCOMP, SYS_RT_SIGACTION = 155, 317, 13  # x86_64
SIG_IGN, SIGKILL, SIGSTOP, NSIG = 1, 9, 19, 64


class LayerError(Exception):
    """A layer of the plan that could not be applied: args are (layer, why)."""


def check(result: int, layer: str, what: str) -> int:
    if result < 0:
        raise LayerError(layer, f"{what}: {os.strerror(ctypes.get_errno())}")
    return result


def _b(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None, layer: str = "mounts"
) -> None:
    check(
        libc.mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data)),
        layer,
        f"mount {fstype or source or ''} on {target}",
    )


def umount(target: str, flags: int = 0, layer: str = "mounts") -> None:
    check(libc.umount2(_b(target), flags), layer, f"umount {target}")


def unshare(flags: int, layer: str) -> None:
    check(libc.unshare(flags), layer, f"unshare({flags:#x})")


def setns(path: str, nstype: int, layer: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise LayerError(layer, f"open {path}: {e.strerror}") from None
    try:
        check(libc.setns(fd, nstype), layer, f"setns({path})")
    finally:
        os.close(fd)


def pivot_root(new_root: str, layer: str = "mounts") -> None:
    """Make `new_root` (a mount point) the root of this mount namespace and drop the old root beneath it."""
    os.chdir(new_root)
    check(libc.syscall(ctypes.c_long(SYS_PIVOT_ROOT), b".", b"."), layer, f"pivot_root({new_root})")
    umount(".", MNT_DETACH, layer)
    os.chdir("/")


class _KernelSigaction(ctypes.Structure):
    _fields_ = [
        ("handler", ctypes.c_ulong),
        ("flags", ctypes.c_ulong),
        ("restorer", ctypes.c_ulong),
        ("mask", ctypes.c_uint64),
    ]


def default_ignored_signals(layer: str = "signals") -> list[int]:
    """Set every ignored signal back to its default, as an exec would keep it ignored: those Python ignores, and
    any the harness's own parent ignored (glibc's reserved 32 and 33 included, which Python's signal module
    cannot name); the signals changed."""
    changed = []
    for sig in range(1, NSIG + 1):
        if sig in (SIGKILL, SIGSTOP):
            continue
        old = _KernelSigaction()
        check(
            libc.syscall(
                ctypes.c_long(SYS_RT_SIGACTION), ctypes.c_long(sig), None, ctypes.byref(old), ctypes.c_size_t(8)
            ),
            layer,
            f"rt_sigaction({sig})",
        )
        if old.handler == SIG_IGN:
            default = _KernelSigaction()  # SIG_DFL, no flags, an empty mask
            check(
                libc.syscall(
                    ctypes.c_long(SYS_RT_SIGACTION), ctypes.c_long(sig), ctypes.byref(default), None, ctypes.c_size_t(8)
                ),
                layer,
                f"rt_sigaction({sig}, SIG_DFL)",
            )
            changed.append(sig)
    return changed


def prctl(option: int, value: int, layer: str) -> None:
    check(libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), layer, f"prctl({option}, {value})")
