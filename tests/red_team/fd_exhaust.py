"""Red team, class 13: file descriptors and ports.

Before the first `serve` of each stack answers: open files past nofile (4096) and raise its hard limit; then,
from three children (each within nofile), hold 10500 idle TCP connections to the account proxy for 4 s:
Toxiproxy takes two descriptors for each (the relay's and its own to the account system), past the 20000 it
may open, and the account system one. Does the proxy still answer a query meanwhile?
"""

import os
import resource
import socket
import sys
import time

from .evidence import Attack, Refused, account_host, account_port, first_time, is_serve, whoami
from .reference.__main__ import main

NAME = "fd_exhaust"
ATTEMPTS = ("nofile", "nofile-hard-limit", "proxy-connections")
A = Attack(NAME)
NOFILE, CONNECTIONS, HOLDERS, HOLD_S = 4096, 3500, 3, 4.0
LIMITS = {"ready_timeout_s": 30}


def nofile() -> str:
    fds, why = [], "no refusal"
    try:
        while len(fds) < 4 * NOFILE:
            fds.append(os.open("/dev/null", os.O_RDONLY))
    except OSError as e:
        why = e.strerror
    finally:
        for fd in fds:
            os.close(fd)
    if len(fds) > NOFILE:
        return f"{len(fds)} files open in one process (nofile {NOFILE})"
    raise Refused(f"{len(fds)} files, then: {why}")


def hard_limit() -> str:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard * 4, hard * 4))
    except ValueError as e:  # Python's word for the kernel's EPERM
        raise Refused(f"{soft}/{hard}: {e}") from None
    return f"raised nofile from {soft}/{hard} to {hard * 4}"


def query() -> str:
    with socket.create_connection((account_host(), account_port()), timeout=5) as s:
        s.sendall(b"GET /transfer/red-team-probe HTTP/1.0\r\n\r\n")
        return s.recv(64).decode(errors="replace").splitlines()[0]


def hold_connections(w: int) -> None:
    """In a child: open CONNECTIONS to the account proxy, say how many, hold them HOLD_S."""
    held = []
    try:
        for _ in range(CONNECTIONS):
            held.append(socket.create_connection((account_host(), account_port()), timeout=5))
        os.write(w, f"{len(held)}\n".encode())
    except OSError as e:
        os.write(w, f"{len(held)} ({e.strerror or type(e).__name__})\n".encode())
    os.close(w)
    time.sleep(HOLD_S)
    os._exit(0)


def proxy_connections() -> str:
    """HOLDERS children hold their connections while the parent asks a query through the same proxy."""
    r, w = os.pipe()
    children = []
    for _ in range(HOLDERS):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            hold_connections(w)
        children.append(pid)
    os.close(w)
    said = b""
    while said.count(b"\n") < HOLDERS and (chunk := os.read(r, 200)):
        said += chunk
    os.close(r)
    made = " + ".join(said.decode().split("\n")[:HOLDERS])
    if "refused" in made:  # the slot's network capped them: its own later connections are refused alike
        for pid in children:
            os.waitpid(pid, 0)
        raise Refused(
            f"the slot's network refused connections past its cap ({made} held): the proxy is shared "
            "by the worker's stacks, not the relay's to exhaust"
        )
    try:
        answer, why = query(), ""
    except OSError as e:
        answer, why = None, e.strerror or type(e).__name__
    finally:
        for pid in children:
            os.waitpid(pid, 0)
    if answer is None:
        return (
            f"with {made} connections held, the harness's account proxy (its Toxiproxy and the account system "
            f"behind it, shared by the worker's stacks) no longer answered a query within 5 s ({why})"
        )
    raise Refused(f"{made} connections held; the proxy still answered: {answer}")


def attack() -> None:
    A.run("nofile", nofile)
    A.run("nofile-hard-limit", hard_limit)
    A.run("proxy-connections", proxy_connections)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]) and first_time(NAME):
        attack()
    sys.exit(main(sys.argv[1:]))
