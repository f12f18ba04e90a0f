"""The reference relay, plus an attack on its sandbox's init (relaychaos/sandbox/notify.py), which looks at every
bind, connect and listen of the relay, as serve starts (before it is ready; serve then runs as the reference):

ATTACK init_flood/binds: binds to ports the plan refuses for 1.5 s (at most 60,000; 2,000 ports, so 2,000 lines in
the log), as fast as init answers: a flood of notifications;
ATTACK init_flood/connect-race: for 1 s, connects whose address (in memory init reads and the kernel reads after
it) a second thread flips between the account proxy's port and the next one: a connect that gets past init and
Landlock to the other port (connected to it, or refused or timed out by the network rather than EACCES) is ACHIEVED;
ATTACK init_flood/listen-unbound: listen() on a socket never bound (the kernel would give it an ephemeral port);
ATTACK init_flood/listen-swap: from a second thread, 2,000 listen() calls on a descriptor a third thread keeps
swapping (dup2) between a socket bound to RELAY_PORT and an unbound one: an unbound socket left listening, on a port
other than RELAY_PORT, is ACHIEVED.
"""

import ctypes
import errno
import os
import socket
import struct
import sys
import threading
import time
from urllib.parse import urlsplit

from .reference.__main__ import main

libc = ctypes.CDLL(None, use_errno=True)
BINDS, PORTS, BINDS_S, RACE_S = 60_000, 2000, 1.5, 1.0


def say(attempt: str, what: str) -> None:
    print(f"ATTACK init_flood/{attempt}: {what}", flush=True)


def binds() -> None:
    began, refused, got = time.monotonic(), 0, []
    sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    n = 0
    while n < BINDS and time.monotonic() < began + BINDS_S:
        n += 1
        try:
            sock.bind(("::1", 1024 + n % PORTS))
            got.append(sock.getsockname()[1])
            sock.close()
            sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        except OSError as e:
            refused += e.errno == errno.EACCES
    rate = n / (time.monotonic() - began)
    say("binds", f"ACHIEVED bound {got[:5]}" if got else f"refused EACCES {refused} of {n} ({rate:,.0f}/s)")


def connect_race() -> None:
    url = urlsplit(os.environ["ACCOUNT_URL"])
    host, good = url.hostname or "", url.port or 0
    bad = good + 1
    sockaddr = struct.pack("=H", socket.AF_INET) + struct.pack("!H", good) + socket.inet_aton(host) + bytes(8)
    addr = ctypes.create_string_buffer(sockaddr)
    done = threading.Event()

    def flip() -> None:
        while not done.is_set():
            struct.pack_into("!H", addr, 2, bad)
            struct.pack_into("!H", addr, 2, good)

    threading.Thread(target=flip, daemon=True).start()
    seen: dict[str, int] = {}
    deadline = time.monotonic() + RACE_S
    while time.monotonic() < deadline:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 0, 300_000))
        rc = libc.connect(s.fileno(), addr, 16)
        err = 0 if rc == 0 else ctypes.get_errno()
        what = f"connected to {s.getpeername()[1]}" if rc == 0 else errno.errorcode.get(err, str(err))
        seen[what] = seen.get(what, 0) + 1
        s.close()
    done.set()
    beyond = {k: v for k, v in seen.items() if k not in (f"connected to {good}", "EACCES")}
    say("connect-race", f"ACHIEVED {beyond} (all: {seen})" if beyond else f"refused {seen}")


def listen_unbound() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.listen(5)
        say("listen-unbound", f"ACHIEVED listening on {sock.getsockname()}")
    except OSError as e:
        say("listen-unbound", f"refused {errno.errorcode.get(e.errno or 0, e.errno)}")
    finally:
        sock.close()


def listen_swap() -> None:
    port = int(os.environ["RELAY_PORT"])
    good = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    good.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    good.bind((os.environ["RELAY_HOST"], port))
    fd, done, seen = os.dup(good.fileno()), threading.Event(), {}

    def swap() -> None:
        while not done.is_set():
            bad = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            os.dup2(bad.fileno(), fd)
            bad.close()
            os.dup2(good.fileno(), fd)

    def listen() -> None:
        for _ in range(2000):
            rc = libc.listen(fd, 5)
            what = "0" if rc == 0 else errno.errorcode.get(ctypes.get_errno(), "?")
            probe = socket.socket(fileno=os.dup(fd))
            listening = probe.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
            if listening and probe.getsockname()[1] != port:
                what = f"listening on {probe.getsockname()}"
            probe.close()
            seen[what] = seen.get(what, 0) + 1

    threads = [threading.Thread(target=swap), threading.Thread(target=listen)]
    for t in threads:
        t.start()
    threads[1].join()
    done.set()
    threads[0].join()
    os.close(fd)
    good.close()
    beyond = {k: v for k, v in seen.items() if k.startswith("listening")}
    say("listen-swap", f"ACHIEVED {beyond} (all: {seen})" if beyond else f"refused {seen}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        binds()
        connect_race()
        listen_unbound()
        listen_swap()
    sys.exit(main(sys.argv[1:]))
