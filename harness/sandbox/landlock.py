"""Landlock, the kernel's own sandbox, through its three system calls (no root needed).

`abi()` tells which version the running kernel offers (0: none). `Ruleset`
gathers what one process may do, sized to that ABI: files beneath folders
(read-only, read-write), TCP ports to bind and to connect to (ABI 4+), and
signal and abstract-socket scoping (ABI 6+); `restrict_self()` then confines
the calling thread and everything it execs, for good. Rights the ABI does not
know are dropped, never asked for: asking would fail with EINVAL.
"""

from __future__ import annotations

import ctypes
import os
import struct

_SYS_CREATE, _SYS_ADD_RULE, _SYS_RESTRICT = 444, 445, 446  # x86_64 and aarch64 (asm-generic) alike
_CREATE_VERSION = 1
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2

# Filesystem rights (linux/landlock.h) and the ABI that introduced each.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only rights a file (not folder) takes
READ_ONLY = EXECUTE | READ_FILE | READ_DIR
# All but device nodes and Unix sockets bound to a path: a relay's commands share its folder and /tmp, and a
# socket there would let one command pass another an open file, a killed serve's listener included.
READ_WRITE = (1 << 16) - 1 & ~(MAKE_CHAR | MAKE_BLOCK | MAKE_SOCK)
# The ledger's folder: regular files and folders only. No FIFO, socket or symbolic link can be made
# there, nor a file moved or linked in from elsewhere (REFER): whoever opens the ledger by its path
# (the harness, the account system) finds a regular file or nothing.
LEDGER = READ_ONLY | WRITE_FILE | TRUNCATE | MAKE_REG | REMOVE_FILE | MAKE_DIR | REMOVE_DIR
# Network rights (ABI 4) and scopes (ABI 6).
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LandlockError(OSError):
    """A Landlock call the kernel refused (errno and which call)."""


def _call(number: int, *args: object) -> int:  # args: ctypes values, None or ints, as the syscall takes them
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"landlock syscall {number}: {os.strerror(err)}")
    return result


def abi() -> int:
    """The Landlock ABI version this kernel offers: 0 when it has none (or it is disabled at boot)."""
    try:
        return _call(_SYS_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_VERSION))
    except LandlockError:
        return 0


def fs_rights(version: int) -> int:
    """Every filesystem right the given ABI handles."""
    return _FS_BY_ABI[max(v for v in _FS_BY_ABI if v <= version)] if version >= 1 else 0


def kinds(version: int) -> list[str]:
    """The rule kinds a ruleset of this ABI enforces, for reports."""
    return (
        (["filesystem"] if version >= 1 else [])
        + (["tcp-bind", "tcp-connect"] if version >= 4 else [])
        + (["signal-scope", "abstract-unix-socket-scope"] if version >= 6 else [])
    )


class Ruleset:
    """What one confined process may do; build it, then `restrict_self()` (see the module doc)."""

    def __init__(self, version: int):
        if version < 1:
            raise LandlockError(95, "this kernel offers no Landlock")
        self.version = version
        self.fs = fs_rights(version)
        self.net = BIND_TCP | CONNECT_TCP if version >= 4 else 0
        self.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
        # struct landlock_ruleset_attr grew with the ABI: pass exactly the size this ABI knows.
        fields = [self.fs] + ([self.net] if version >= 4 else []) + ([self.scoped] if version >= 6 else [])
        attr = ctypes.create_string_buffer(struct.pack(f"={len(fields)}Q", *fields), 8 * len(fields))
        self.fd = _call(_SYS_CREATE, attr, ctypes.c_size_t(8 * len(fields)), ctypes.c_uint32(0))

    def allow_path(self, path: str, rights: int) -> None:
        """Allow `rights` beneath path (a folder), or the file rights among them on a file; a missing path
        is skipped."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            allowed = rights & self.fs
            if not os.path.isdir(path):
                allowed &= FILE_RIGHTS
            attr = struct.pack("=Qi", allowed, fd)  # struct landlock_path_beneath_attr is packed
            _call(
                _SYS_ADD_RULE,
                ctypes.c_int(self.fd),
                ctypes.c_int(_RULE_PATH_BENEATH),
                ctypes.create_string_buffer(attr, len(attr)),
                ctypes.c_uint32(0),
            )
        finally:
            os.close(fd)

    def allow_port(self, port: int, rights: int) -> None:
        """Allow binding and/or connecting (BIND_TCP, CONNECT_TCP) on one TCP port (ABI 4+; else no-op)."""
        if not self.net:
            return
        attr = struct.pack("=QQ", rights & self.net, port)
        _call(
            _SYS_ADD_RULE,
            ctypes.c_int(self.fd),
            ctypes.c_int(_RULE_NET_PORT),
            ctypes.create_string_buffer(attr, len(attr)),
            ctypes.c_uint32(0),
        )

    def restrict_self(self) -> None:
        """Confine this thread (and what it execs) to the rules added; sets no_new_privs first."""
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        try:
            _call(_SYS_RESTRICT, ctypes.c_int(self.fd), ctypes.c_uint32(0))
        finally:
            os.close(self.fd)
