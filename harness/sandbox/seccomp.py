"""The seccomp filter of every relay command, and the refusals it reports.

What a relay may not do, whatever its uid (x86_64; another architecture gets no filter and the level says so):
- open a socket other than TCP over IPv4 or IPv6 (protocol 0 or IPPROTO_TCP) or a Unix socket: MPTCP and SCTP
  (EPROTONOSUPPORT, as a kernel without them answers, so that runtimes trying MPTCP first fall back to TCP; MPTCP is
  not reported for that reason), datagram and raw sockets (EACCES), packet, netlink and every other family
  (EAFNOSUPPORT) are refused. Landlock's network rules cover TCP alone, so this is what keeps them whole;
- make a namespace (clone or unshare with a CLONE_NEW* flag, setns): EPERM;
- the kernel's administrative and introspection calls: ptrace and process_vm_*, bpf, perf_event_open, userfaultfd,
  keyrings, mounts, modules, kexec, reboot, swap, clocks, handles;
- io_uring (it can open sockets beyond this filter's sight): ENOSYS, as on a kernel without it; clone3 (its flags
  are out of a filter's reach): ENOSYS, so libc falls back to clone;
- TCP Fast Open (sendto, sendmsg or sendmmsg with MSG_FASTOPEN: a connect Landlock does not see): EACCES; a lease on
  a file (fcntl F_SETLEASE: another process's open() of it would wait for the lease to break, the harness's own
  reading the ledger included): EPERM.

`program(notify)` assembles the classic BPF. With notify, each refusal goes to the command's init process
(SECCOMP_RET_USER_NOTIF), which answers with the errno of `refusal()` and writes one line naming the call and its
arguments into the relay's log (relaychaos.sandbox.notify); without, the filter answers the errno itself. With
notify, init also looks at every bind and connect with an address of an IP socket's size, and every listen, against
the ports the plan allows (notify's module doc says how, and how each look fails closed). With `slow_locks` (a
plan's lock_delay_ms), init also holds every record lock a relay takes or lets go with
fcntl (SQLite's locks on its ledger) for that long before it goes on, as storage shared across machines would: a
scenario's way to force two relays' copies to interleave inside a check-then-insert, which on a local tmpfs lasts
microseconds. A relay cannot tell it from a slow disk; a correct one is correct at any speed.
Stdlib only (the exec wrapper imports it by path).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
RET_KILL_PROCESS, RET_ERRNO, RET_USER_NOTIF, RET_ALLOW = 0x80000000, 0x00050000, 0x7FC00000, 0x7FFF0000
SET_MODE_FILTER, FLAG_LOG, FLAG_NEW_LISTENER = 1, 2, 8
NOTIF_RECV, NOTIF_SEND = 0xC0502100, 0xC0182101  # _IOWR('!', 0, seccomp_notif), _IOWR('!', 1, ..._resp)
NOTIF_ID_VALID = 0x40082102  # _IOW('!', 2, __u64)
NOTIF = struct.Struct("=QIIiIQ6Q")  # seccomp_notif: id, pid, flags, seccomp_data (nr, arch, ip, args)
NOTIF_RESP = struct.Struct("=QqiI")  # seccomp_notif_resp: id, val, error, flags
FLAG_CONTINUE = 1

AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
SOCK_STREAM, SOCK_TYPE_MASK, IPPROTO_TCP, IPPROTO_MPTCP = 1, 0xF, 6, 262
NAMESPACE_FLAGS = 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00020000 | 0x80
SOCKET, SOCKETPAIR, CLONE, UNSHARE, CLONE3, CONNECT, BIND, LISTEN = 41, 53, 56, 272, 435, 42, 49, 50
SENDTO, SENDMSG, SENDMMSG, FCNTL = 44, 46, 307, 72
MSG_FASTOPEN, F_SETLEASE = 0x20000000, 1024
LOCKS = (6, 7, 37, 38)  # fcntl F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW: a record lock taken or let go (SQLite's)
SEND_FLAGS = {SENDTO: 3, SENDMSG: 2, SENDMMSG: 3}  # which argument holds the flags
MIN_INET_ADDRLEN = 16  # sizeof(struct sockaddr_in); sockaddr_in6 is 28
REFUSED = {  # refused outright: number -> (name, errno)
    101: ("ptrace", errno.EPERM),
    310: ("process_vm_readv", errno.EPERM),
    311: ("process_vm_writev", errno.EPERM),
    438: ("pidfd_getfd", errno.EPERM),
    321: ("bpf", errno.EPERM),
    298: ("perf_event_open", errno.EPERM),
    323: ("userfaultfd", errno.EPERM),
    248: ("add_key", errno.EPERM),
    249: ("request_key", errno.EPERM),
    250: ("keyctl", errno.EPERM),
    308: ("setns", errno.EPERM),
    165: ("mount", errno.EPERM),
    166: ("umount2", errno.EPERM),
    155: ("pivot_root", errno.EPERM),
    161: ("chroot", errno.EPERM),
    428: ("open_tree", errno.EPERM),
    429: ("move_mount", errno.EPERM),
    430: ("fsopen", errno.EPERM),
    431: ("fsconfig", errno.EPERM),
    432: ("fsmount", errno.EPERM),
    433: ("fspick", errno.EPERM),
    442: ("mount_setattr", errno.EPERM),
    175: ("init_module", errno.EPERM),
    313: ("finit_module", errno.EPERM),
    176: ("delete_module", errno.EPERM),
    246: ("kexec_load", errno.EPERM),
    320: ("kexec_file_load", errno.EPERM),
    169: ("reboot", errno.EPERM),
    167: ("swapon", errno.EPERM),
    168: ("swapoff", errno.EPERM),
    163: ("acct", errno.EPERM),
    179: ("quotactl", errno.EPERM),
    443: ("quotactl_fd", errno.EPERM),
    303: ("name_to_handle_at", errno.EPERM),
    304: ("open_by_handle_at", errno.EPERM),
    300: ("fanotify_init", errno.EPERM),
    103: ("syslog", errno.EPERM),
    172: ("iopl", errno.EPERM),
    173: ("ioperm", errno.EPERM),
    164: ("settimeofday", errno.EPERM),
    227: ("clock_settime", errno.EPERM),
    159: ("adjtimex", errno.EPERM),
    305: ("clock_adjtime", errno.EPERM),
    212: ("lookup_dcookie", errno.EPERM),
    153: ("vhangup", errno.EPERM),
    425: ("io_uring_setup", errno.ENOSYS),
    426: ("io_uring_enter", errno.ENOSYS),
    427: ("io_uring_register", errno.ENOSYS),
}
FAMILIES = {1: "AF_UNIX", 2: "AF_INET", 10: "AF_INET6", 16: "AF_NETLINK", 17: "AF_PACKET", 40: "AF_VSOCK"}
TYPES = {1: "SOCK_STREAM", 2: "SOCK_DGRAM", 3: "SOCK_RAW", 5: "SOCK_SEQPACKET"}
PROTOCOLS = {0: "0", 6: "IPPROTO_TCP", 17: "IPPROTO_UDP", 132: "IPPROTO_SCTP", 262: "IPPROTO_MPTCP"}
WHY_SOCKET = "a relay may open only TCP sockets (IPv4, IPv6) and Unix sockets"


def refusal(nr: int, args: tuple[int, ...]) -> tuple[str, int] | None:
    """(the call as a person reads it, errno) when the filter refuses it; None when it lets it through."""
    if nr in REFUSED:
        name, err = REFUSED[nr]
        return f"{name}()", err
    low = [a & 0xFFFFFFFF for a in args]
    if nr == SOCKET:
        family, kind, proto = low[0], low[1] & SOCK_TYPE_MASK, low[2]
        call = f"socket({FAMILIES.get(family, family)}, {TYPES.get(kind, kind)}, {PROTOCOLS.get(proto, proto)})"
        if family == AF_UNIX:
            return None
        if family not in (AF_INET, AF_INET6):
            return call, errno.EAFNOSUPPORT
        if kind != SOCK_STREAM:
            return call, errno.EACCES
        return None if proto in (0, IPPROTO_TCP) else (call, errno.EPROTONOSUPPORT)
    if nr == SOCKETPAIR and low[0] != AF_UNIX:
        return f"socketpair({FAMILIES.get(low[0], low[0])}, ...)", errno.EAFNOSUPPORT
    if nr in (CLONE, UNSHARE) and low[0] & NAMESPACE_FLAGS:
        return f"{'clone' if nr == CLONE else 'unshare'}(flags {low[0]:#x}: a new namespace)", errno.EPERM
    if nr in SEND_FLAGS and low[SEND_FLAGS[nr]] & MSG_FASTOPEN:  # a connect Landlock does not see
        return f"{('sendto', 'sendmsg')[nr != SENDTO] if nr != SENDMMSG else 'sendmmsg'}(MSG_FASTOPEN)", errno.EACCES
    if nr == FCNTL and low[1] == F_SETLEASE:  # a lease makes another's open() of the file wait
        return "fcntl(F_SETLEASE)", errno.EPERM
    return None


# -- the program -------------------------------------------------------------------------------------
_LD_ABS, _ALU_AND, _JEQ, _JGE, _JSET, _RET = 0x20, 0x54, 0x15, 0x35, 0x45, 0x06
_NR, _ARCH = 0, 4


def _arg(i: int) -> int:
    return 16 + 8 * i  # the low 32 bits of seccomp_data.args[i] (little-endian)


class _Asm:
    """Classic BPF with named jump targets, resolved by assemble()."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, int | str, int]] = []  # jumps: offsets, or labels
        self.labels: dict[str, int] = {}

    def at(self, label: str) -> None:
        self.labels[label] = len(self.code)

    def op(self, code: int, k: int = 0, jt: int | str = 0, jf: int | str = 0) -> None:
        self.code.append((code, jt, jf, k))

    def assemble(self) -> bytes:
        out = []
        for i, (code, jt, jf, k) in enumerate(self.code):
            jt, jf = (self.labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf))
            assert 0 <= jt <= 255 and 0 <= jf <= 255, "a jump beyond classic BPF's reach"
            out.append(struct.pack("=HBBI", code, jt, jf, k))
        return b"".join(out)


def program(notify: bool, slow_locks: bool = False) -> bytes:
    """The filter (see the module doc); refusals answered by the listener when `notify`, and record locks held
    there too when `slow_locks` (only with `notify`)."""
    a = _Asm()
    a.op(_LD_ABS, _ARCH)
    a.op(_JEQ, AUDIT_ARCH_X86_64, 0, "kill")
    a.op(_LD_ABS, _NR)
    a.op(_JGE, X32_SYSCALL_BIT, "enosys")
    a.op(_JEQ, CLONE3, "enosys")
    a.op(_JEQ, SOCKET, "socket")
    a.op(_JEQ, SOCKETPAIR, "socketpair")
    a.op(_JEQ, CLONE, "ns_flags")
    a.op(_JEQ, UNSHARE, "ns_flags")
    for nr, arg in sorted(SEND_FLAGS.items()):
        a.op(_JEQ, nr, f"flags{arg}")
    a.op(_JEQ, FCNTL, "fcntl")
    if notify:
        a.op(_JEQ, BIND, "inet_address")
        a.op(_JEQ, CONNECT, "inet_address")
        a.op(_JEQ, LISTEN, "look")
    for nr, (_, err) in sorted(REFUSED.items()):
        a.op(_JEQ, nr, f"deny{err}")
    a.op(_RET, RET_ALLOW)
    _argument_checks(a, notify, slow_locks and notify)
    _returns(a, notify)
    return a.assemble()


def _argument_checks(a: _Asm, notify: bool, slow_locks: bool = False) -> None:
    """The calls refused for their arguments: sockets, namespaces, fast open, leases, and (notify) addresses."""
    a.at("socket")
    a.op(_LD_ABS, _arg(0))
    a.op(_JEQ, AF_UNIX, "allow")
    a.op(_JEQ, AF_INET, "stream")
    a.op(_JEQ, AF_INET6, "stream", f"deny{errno.EAFNOSUPPORT}")
    a.at("stream")
    a.op(_LD_ABS, _arg(1))
    a.op(_ALU_AND, SOCK_TYPE_MASK)
    a.op(_JEQ, SOCK_STREAM, 0, f"deny{errno.EACCES}")
    a.op(_LD_ABS, _arg(2))
    a.op(_JEQ, 0, "allow")
    a.op(_JEQ, IPPROTO_TCP, "allow")
    a.op(_JEQ, IPPROTO_MPTCP, "no_mptcp", f"deny{errno.EPROTONOSUPPORT}")
    a.at("socketpair")
    a.op(_LD_ABS, _arg(0))
    a.op(_JEQ, AF_UNIX, "allow", f"deny{errno.EAFNOSUPPORT}")
    a.at("ns_flags")
    a.op(_LD_ABS, _arg(0))
    a.op(_JSET, NAMESPACE_FLAGS, f"deny{errno.EPERM}", "allow")
    for arg in sorted(set(SEND_FLAGS.values())):
        a.at(f"flags{arg}")
        a.op(_LD_ABS, _arg(arg))
        a.op(_JSET, MSG_FASTOPEN, f"deny{errno.EACCES}", "allow")
    a.at("fcntl")
    a.op(_LD_ABS, _arg(1))
    a.op(_JEQ, F_SETLEASE, f"deny{errno.EPERM}", 0 if slow_locks else "allow")
    if slow_locks:
        for cmd in LOCKS:
            a.op(_JEQ, cmd, "look")
        a.op(_RET, RET_ALLOW)
    if notify:
        a.at("inet_address")
        a.op(_LD_ABS, _arg(2))
        a.op(_JGE, MIN_INET_ADDRLEN, "look", "allow")
        a.at("look")
        a.op(_RET, RET_USER_NOTIF)


def _returns(a: _Asm, notify: bool) -> None:
    """Where every jump lands: allow, kill, quietly absent, or refused (by errno, or through the listener)."""
    a.at("allow")
    a.op(_RET, RET_ALLOW)
    a.at("kill")
    a.op(_RET, RET_KILL_PROCESS)
    a.at("enosys")
    a.op(_RET, RET_ERRNO | errno.ENOSYS)
    a.at("no_mptcp")  # as a kernel without MPTCP answers: runtimes that try it first (Go) fall back to TCP quietly
    a.op(_RET, RET_ERRNO | errno.EPROTONOSUPPORT)
    for err in sorted({e for _, e in REFUSED.values()} | {errno.EAFNOSUPPORT, errno.EACCES, errno.EPROTONOSUPPORT}):
        a.at(f"deny{err}")
        a.op(_RET, RET_USER_NOTIF if notify else RET_ERRNO | err)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(notify: bool, slow_locks: bool = False) -> int | None:
    """Install the filter on this thread (no_new_privs must be set); the listener's fd when `notify`."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    code = program(notify, slow_locks)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Fprog(len(code) // 8, ctypes.addressof(buf))
    flags = FLAG_NEW_LISTENER if notify else FLAG_LOG
    fd = libc.syscall(ctypes.c_long(317), ctypes.c_ulong(SET_MODE_FILTER), ctypes.c_ulong(flags), ctypes.byref(prog))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp(SET_MODE_FILTER): {os.strerror(err)}")
    return fd if notify else None
