"""The init process's end of the seccomp filter (relaychaos.sandbox.seccomp): every notification answered, and what
was refused said once in the relay's log.

- A call the filter refuses outright (seccomp.refusal) gets its errno.
- A bind or connect with an address of an IP socket's size: init reads the address from the caller's memory; a port
  the plan does not allow is refused with EACCES, the others go on (FLAG_CONTINUE) and Landlock, which a relay cannot
  race, decides them. Another thread of the relay may change the address once init has read it: a refusal refuses
  all the same, and what goes on is Landlock's to decide.
- A listen: init takes a copy of the caller's socket (pidfd_getfd, through the thread group's leader, so a call from
  any thread is looked at) and, when the socket is bound to a port the plan allows, listens on that very socket
  itself and answers with the result: the socket looked at is the one that listens, whatever the caller's file
  table holds by then. Any other (an unbound socket, which would take an ephemeral port, included) gets EACCES.
- Every look fails closed: a call init cannot look at (the caller's memory or socket unreadable, its notification
  no longer valid) is refused with EACCES, and the reason said in the log. The notification's validity
  (SECCOMP_IOCTL_NOTIF_ID_VALID) is checked after init has read the caller's memory or file table, before it acts.
- With `slow_locks` (a plan's lock_delay_ms), every record lock a relay takes or lets go with fcntl is held for
  that long before it goes on (seccomp's module doc says why).
Stdlib only (the exec wrapper imports it by path).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import heapq
import os
import socket
import struct
import time
from collections.abc import Callable

# The type checker takes a name TYPE_CHECKING as true, so it reads the package's seccomp module (as __main__ does).
TYPE_CHECKING = False
if TYPE_CHECKING or __package__:  # relaychaos.sandbox.notify
    from . import seccomp
else:  # a sibling of the exec wrapper, imported by path
    import seccomp

PIDFD_GETFD = 438
NAMES = {seccomp.BIND: "bind", seccomp.CONNECT: "connect", seccomp.LISTEN: "listen"}


class Uninspectable(Exception):
    """A call init could not look at: why, in words for the relay's log."""


class Listener:
    """The init process's end of the filter (see the module doc), given the ports the plan allows."""

    def __init__(
        self,
        fd: int,
        write: Callable[[str], object],
        bind: tuple[int, ...] | None = None,
        connect: tuple[int, ...] = (),
        lock_delay_s: float = 0.0,
    ) -> None:
        """`bind` None: the plan has no port rules (no Landlock network rules), so nothing is looked at.
        `lock_delay_s`: how long each record lock is held before it goes on (the filter sends them when
        slow_locks)."""
        self.fd, self.write = fd, write
        self.said: set[str] = set()  # what was told in the log already
        self.allowed = (
            {seccomp.BIND: set(bind), seccomp.LISTEN: set(bind), seccomp.CONNECT: set(connect)}
            if bind is not None
            else {}
        )
        self.lock_delay_s = lock_delay_s
        self.held: list[tuple[float, int]] = []  # (when it goes on, notification id), in order

    def timeout_ms(self) -> int | None:
        """How long init may wait for the next event before a held lock is due (None: nothing is held)."""
        if not self.held:
            return None
        return max(0, int((self.held[0][0] - time.monotonic()) * 1000) + 1)

    def release_due(self) -> None:
        """Let every held lock whose time has come go on."""
        now = time.monotonic()
        while self.held and self.held[0][0] <= now:
            _, ident = heapq.heappop(self.held)
            self._send(seccomp.NOTIF_RESP.pack(ident, 0, 0, seccomp.FLAG_CONTINUE))

    def answer(self) -> None:
        """Take one notification (the fd is readable) and answer it."""
        buf = bytearray(seccomp.NOTIF.size)
        try:
            fcntl.ioctl(self.fd, seccomp.NOTIF_RECV, buf, True)
        except OSError:
            return  # the caller was interrupted by a signal meanwhile: nothing to answer
        ident, pid, _, nr, _, _, *args = seccomp.NOTIF.unpack(buf)
        if nr == seccomp.FCNTL and args[1] in seccomp.LOCKS:  # only the filter's slow_locks sends these: held, then on
            if "locks" not in self.said:
                self.said.add("locks")
                self.write(
                    f"relaychaos sandbox: this scenario delays each file lock by "
                    f"{self.lock_delay_s * 1000:g} ms, as slow shared storage would\n"
                )
            heapq.heappush(self.held, (time.monotonic() + self.lock_delay_s, ident))
            return
        if nr not in self.allowed:
            found = seccomp.refusal(nr, tuple(args))
            self._send(
                seccomp.NOTIF_RESP.pack(ident, 0, 0, seccomp.FLAG_CONTINUE)
                if found is None
                else self._refuse(ident, pid, *found)
            )
            return
        try:
            resp = self._listen(ident, pid, args) if nr == seccomp.LISTEN else self._address(ident, pid, nr, args)
        except Uninspectable as e:
            resp = self._refuse(ident, pid, f"{NAMES[nr]}() that the sandbox could not inspect ({e})", errno.EACCES)
        self._send(resp)

    def _refuse(self, ident: int, pid: int, call: str, err: int) -> bytes:
        """The answer refusing `call` with `err`, said in the log the first time."""
        if call not in self.said:
            self.said.add(call)
            self.write(
                f"relaychaos sandbox: seccomp refused {call} (pid {pid} in the relay's namespace): "
                f"{errno.errorcode.get(err, err)}; {self._why(call)}\n"
            )
        return seccomp.NOTIF_RESP.pack(ident, 0, -err, 0)

    def _send(self, resp: bytes) -> None:
        with contextlib.suppress(OSError):  # the caller is gone or was interrupted: the kernel restarts or drops it
            fcntl.ioctl(self.fd, seccomp.NOTIF_SEND, bytearray(resp), True)

    def _valid(self, ident: int) -> None:
        """Uninspectable unless the notification is still pending: the caller still waits in the call."""
        try:
            fcntl.ioctl(self.fd, seccomp.NOTIF_ID_VALID, struct.pack("=Q", ident))
        except OSError as e:
            raise Uninspectable(f"the call was no longer waiting: {e.strerror}") from None

    def _address(self, ident: int, pid: int, nr: int, args: list[int]) -> bytes:
        """A bind or connect: refused when its port is not the plan's, else on to Landlock."""
        family, host, port = _sockaddr(pid, args[1], args[2])
        self._valid(ident)
        if family not in (seccomp.AF_INET, seccomp.AF_INET6) or port in self.allowed[nr]:
            return seccomp.NOTIF_RESP.pack(ident, 0, 0, seccomp.FLAG_CONTINUE)
        return self._refuse(
            ident, pid, f"{'bind to' if nr == seccomp.BIND else 'connect to'} {host}:{port}", errno.EACCES
        )

    def _listen(self, ident: int, pid: int, args: list[int]) -> bytes:
        """A listen: done here, on the very socket looked at, when it is bound to a port the plan allows."""
        with _socket_of(pid, args[0]) as sock:
            self._valid(ident)
            family, host, port = _bound(sock)
            if family in (seccomp.AF_INET, seccomp.AF_INET6) and port not in self.allowed[seccomp.LISTEN]:
                unbound = " (an unbound socket: an ephemeral port)" if port == 0 else ""
                return self._refuse(ident, pid, f"listen on {host}:{port}{unbound}", errno.EACCES)
            backlog = ctypes.c_int(args[1]).value  # the kernel reads an int, and a negative one as the most
            try:
                sock.listen(backlog if backlog >= 0 else socket.SOMAXCONN)
            except OSError as e:
                return seccomp.NOTIF_RESP.pack(ident, 0, -(e.errno or errno.EINVAL), 0)
            return seccomp.NOTIF_RESP.pack(ident, 0, 0, 0)

    def _why(self, call: str) -> str:
        if call.startswith(("bind", "listen")):
            ports = ", ".join(map(str, sorted(self.allowed.get(seccomp.BIND, ())))) or "none here"
            return f"serve may listen only on RELAY_PORT ({ports})"
        if call.startswith("connect"):
            ports = ", ".join(map(str, sorted(self.allowed.get(seccomp.CONNECT, ())))) or "none"
            return f"a relay may connect only to ACCOUNT_URL (port {ports})"
        return seccomp.WHY_SOCKET if call.startswith("socket") else "the sandbox does not allow it"


def _sockaddr(pid: int, address: int, length: int) -> tuple[int, str, int]:
    """(family, host, port) of the struct sockaddr at `address` in process pid's memory; Uninspectable when it
    cannot be read."""
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            mem.seek(address)
            raw = mem.read(min(length, 128))
        family, port = struct.unpack_from("=H", raw)[0], struct.unpack_from("!H", raw, 2)[0]
        if family == seccomp.AF_INET:
            return family, socket.inet_ntop(socket.AF_INET, raw[4:8]), port
        if family == seccomp.AF_INET6:
            return family, f"[{socket.inet_ntop(socket.AF_INET6, raw[8:24])}]", port
    except (OSError, ValueError, OverflowError, struct.error) as e:
        raise Uninspectable(f"its address could not be read: {e}") from None
    return family, "", port


def _socket_of(pid: int, fd: int) -> socket.socket:
    """A copy of file descriptor `fd` of the thread `pid` (its thread group's: threads share one file table) as a
    socket; Uninspectable when it cannot be had or is no socket."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    try:
        pidfd = os.pidfd_open(_thread_group(pid))
    except (OSError, ValueError) as e:
        raise Uninspectable(f"its process could not be opened: {e}") from None
    try:
        copy = libc.syscall(ctypes.c_long(PIDFD_GETFD), ctypes.c_int(pidfd), ctypes.c_int(fd), ctypes.c_uint(0))
        if copy < 0:
            raise Uninspectable(f"its file descriptor {fd} could not be copied: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(pidfd)
    try:
        return socket.socket(fileno=copy)
    except OSError as e:
        os.close(copy)
        raise Uninspectable(f"its file descriptor {fd} is not a socket: {e.strerror}") from None


def _thread_group(tid: int) -> int:
    """The thread group (process) of thread `tid`: pidfd_open takes a group's leader only."""
    with open(f"/proc/{tid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("Tgid:"):
                return int(line.split()[1])
    raise ValueError(f"/proc/{tid}/status names no Tgid")


def _bound(sock: socket.socket) -> tuple[int, str, int]:
    """(family, host, port) the socket is bound to (an unbound one: port 0; a socket not of IP: no host or port)."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return int(sock.family), "", 0
    host, port = sock.getsockname()[:2]
    return int(sock.family), host if sock.family == socket.AF_INET else f"[{host}]", port
