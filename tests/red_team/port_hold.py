"""Red team, class 14: RELAY_PORT held past the SIGKILL of its serve.

Each serve, once listening:
- leaves a survivor: a child in a session of its own, ignoring the stop signals, holding a copy of the
  listening socket and beating a heartbeat file in /tmp; the next serve of the stack (after the harness's
  kill and restart) looks whether that heartbeat still moves;
- offers its listening socket to the other commands of its stack over a Unix socket in /tmp (SCM_RIGHTS); a
  serve that starts while another runs takes it and keeps it. When the owner's heartbeat stops (the harness
  killed it), the taker looks whether the killed serve's port is still bound, and whether anything that
  connects there gets its answer instead (a stranger answering).
"""

import array
import os
import signal
import socket
import sys
import threading
import time

from .evidence import Attack, Refused, emit, is_serve, scratch, whoami
from .reference.__main__ import main

NAME = "port_hold"
ATTEMPTS = ("survivor", "fd-pass", "stranger")
A = Attack(NAME)
ME = os.urandom(4).hex()  # every serve is PID 2 of its own namespace
BEAT_S, STALE_S = 0.2, 1.5
LIMITS = {"ready_timeout_s": 30}


def beat_path(instance: str) -> str:
    return scratch(f"rt-hold-{instance}.beat")


def listener() -> socket.socket:
    """This serve's listening socket on RELAY_PORT (from its open descriptors), once it is there."""
    port = int(os.environ["RELAY_PORT"])
    for _ in range(200):
        for fd in map(int, os.listdir("/proc/self/fd")):
            try:
                copy = os.dup(fd)
            except OSError:  # closed meanwhile (the listing's own descriptor, another thread's)
                continue
            try:
                s = socket.socket(fileno=copy)
            except OSError:
                os.close(copy)
                continue
            try:
                if (
                    s.family in (socket.AF_INET, socket.AF_INET6)
                    and s.type == socket.SOCK_STREAM
                    and s.getsockname()[1] == port
                    and s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                ):
                    return s
            except OSError:
                pass
            s.close()
        time.sleep(0.05)
    raise Refused("serve never listened on RELAY_PORT")


def heartbeat(instance: str) -> None:
    while True:
        with open(beat_path(instance), "w") as f:
            f.write(f"{os.environ['RELAY_PORT']}\n")
        time.sleep(BEAT_S)


def beats() -> dict[str, tuple[float, int]]:
    """Every serve instance of this stack: (its heartbeat's age, its port)."""
    found = {}
    for name in os.listdir("/tmp"):
        if name.startswith("rt-hold-") and name.endswith(".beat"):
            instance = name[len("rt-hold-") : -len(".beat")]
            try:
                st = os.stat(scratch(name))
                port = int(open(scratch(name)).read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            found[instance] = (time.time() - st.st_mtime, port)
    return found


def survivor(sock: socket.socket) -> None:
    """A grandchild in its own session that keeps the socket and a heartbeat of its own."""
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    heartbeat(f"{ME}-survivor")


def earlier_survivor():
    """A survivor of a serve killed before this one started: its heartbeat still moves."""
    time.sleep(2 * STALE_S)
    others = {i: v for i, v in beats().items() if i.endswith("-survivor") and not i.startswith(ME)}
    alive = {i: v for i, v in others.items() if v[0] < STALE_S}
    dead_owners = {i: v for i, v in alive.items() if beats().get(i[: -len("-survivor")], (99, 0))[0] > STALE_S}
    if dead_owners:
        instance, (age, port) = next(iter(dead_owners.items()))
        return f"the survivor of a killed serve (port {port}) still runs (heartbeat {age:.1f} s old)"
    raise Refused(
        f"{len(others)} earlier survivor(s), none outlived its serve" if others else "no earlier serve in this stack"
    )


def offer(sock: socket.socket) -> None:
    """Give the listening socket to whoever connects to /tmp/rt-hold-<me>.sock."""
    path = scratch(f"rt-hold-{ME}.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    while True:
        conn, _ = server.accept()
        conn.sendmsg([b"L"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [sock.fileno()]))])
        conn.close()


def take():
    """Before this serve answers: take a running sibling serve's listener; (owner, port, socket) or None."""
    live = {i: v for i, v in beats().items() if "-" not in i and i != ME and v[0] < STALE_S}
    if not live:
        A.refused("fd-pass", "no other serve ran alongside this one to take a listener from")
        A.refused("stranger", "no other serve's port to answer on")
        return None
    owner, (_, port) = next(iter(live.items()))
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(scratch(f"rt-hold-{owner}.sock"))
        _, fds, _, _ = socket.recv_fds(conn, 1, 1)
    except OSError as e:
        A.refused("fd-pass", f"serve {owner} did not hand its listener over: {e.strerror}")
        A.refused("stranger", f"no listener of serve {owner} held")
        return None
    finally:
        conn.close()
    emit(f"{NAME}: holding serve {owner}'s listener on port {port}")
    return owner, port, socket.socket(fileno=fds[0])


def watch(owner: str, port: int, held: socket.socket) -> None:
    """Wait for the owner's death (its heartbeat stops), then see what became of its port."""
    while beats().get(owner, (0, 0))[0] < STALE_S:
        time.sleep(BEAT_S)
    time.sleep(0.5)  # the harness's kill is done: its namespace is gone
    if held.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        A.achieved(
            "fd-pass",
            f"serve {owner} was killed, yet its RELAY_PORT {port} is still bound and listening in "
            "the slot's network (held by this serve); a later lease of that port fails there",
        )
    else:
        A.refused("fd-pass", f"serve {owner}'s listener closed with it")
    held.settimeout(2)
    try:
        got, _ = held.accept()
        got.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        got.close()
        A.achieved("stranger", f"answered a connection to killed serve {owner}'s port {port}")
    except OSError as e:
        A.refused("stranger", f"nothing connected to port {port} after its serve died ({e})")


def attack() -> None:
    sock = listener()
    threading.Thread(target=heartbeat, args=(ME,), daemon=True).start()
    survivor(sock)
    threading.Thread(target=offer, args=(sock,), daemon=True).start()


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]):
        A.run("survivor", earlier_survivor)  # before serve answers: the scenario waits for it
        taken = take()
        if taken:
            A.background(watch, *taken)
        A.background(attack, delay_s=0.2)
    sys.exit(main(sys.argv[1:]))
